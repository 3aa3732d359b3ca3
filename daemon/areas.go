package daemon

// State serves the API's state beyond one interpreter: code contexts,
// volumes and snapshots, each an area of the router's.
type State struct {
	Contexts  Contexts
	Volumes   Volumes
	Snapshots Snapshots
	Undo      Undo
}

// State serves the API's contexts, volumes, snapshots and undo.
func (d *Daemon) State() State { return State{Contexts{d}, Volumes{d}, Snapshots{d}, Undo{d}} }
