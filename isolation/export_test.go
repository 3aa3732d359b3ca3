package isolation

// Knobs of the Runtime for the tests outside the package
// (hostview_ext_test.go).

// Overlay says sandboxes get their /etc and image folders through
// overlays; SetOverlay turns them off, as on a host without overlayfs.
func (r *Runtime) Overlay() bool      { return r.overlay }
func (r *Runtime) SetOverlay(on bool) { r.overlay = on }

// EtcDir is the runtime's synthetic /etc.
func (r *Runtime) EtcDir() string { return r.etcDir }
