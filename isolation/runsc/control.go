package runsc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"gvisor.dev/gvisor/pkg/unet"
	"gvisor.dev/gvisor/pkg/urpc"
)

// The sandbox's control socket, spoken to directly for the calls `runsc
// pause`, `resume` and `checkpoint` make there: each runsc command is a
// start of a ~100 MB Go binary (12-55 ms on this host, ~60 ms of page
// faults alone on a slow day), three per memory snapshot, all of them
// while the sandbox is paused. The wire is gVisor's urpc (JSON and the
// files' descriptors over a stream socket), through gVisor's own
// package; the methods and the checkpoint's options are runsc's
// (runsc/boot's containerManager, pkg/sentry/control's SaveOpts), whose
// names and JSON have stayed the same in every build since 2023.

// The containerManager methods runsc's own commands call.
const (
	ctlPause      = "containerManager.Pause"
	ctlResume     = "containerManager.Resume"
	ctlCheckpoint = "containerManager.Checkpoint"
)

// controlSockets says checkpoints speak to the sandbox's control socket
// when they find it; a test turns it off for runsc's commands' path.
var controlSockets = true

// errNoControlSocket is a sandbox whose control socket is not where
// runsc puts it: the caller uses runsc's commands instead.
var errNoControlSocket = errors.New("no control socket for the sandbox")

// controlSocket is the path of sandbox id's control socket: runsc
// creates it in the first of these folders where it can (its --root,
// unless the path would be too long for a socket).
func (rs *runsc) controlSocket(id string) (string, error) {
	name := "runsc-" + id + ".sock"
	for _, dir := range []string{rs.root, "/var/run", "/run", "/tmp"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Lstat(p); err == nil && fi.Mode().Type() == os.ModeSocket {
			return p, nil
		}
	}
	return "", errNoControlSocket
}

// control calls method of sandbox id's control server with arg, within
// ctx (the connection is shut down when ctx ends, which ends the call's
// wait; the sandbox finishes a call it has begun).
func (rs *runsc) control(ctx context.Context, id, method string, arg any) error {
	path, err := rs.controlSocket(id)
	if err != nil {
		return err
	}
	sock, err := unet.Connect(path, false)
	if err != nil {
		return fmt.Errorf("connect to sandbox %s's control socket: %w", id, err)
	}
	c := urpc.NewClient(sock)
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = sock.Shutdown() })
	defer stop()
	if err := c.Call(method, arg, nil); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("sandbox %s: %s: %w", id, method, err)
	}
	return nil
}

// saveOpts is the part of gVisor's control.SaveOpts a checkpoint to a
// local folder sets (`runsc checkpoint --compression none`): the files
// are, in this order, the state file, the pages' metadata and the pages.
type saveOpts struct {
	Metadata      map[string]string `json:"metadata"`
	HavePagesFile bool              `json:"have_pages_file"`
	urpc.FilePayload
	Resume bool
}

// The image's files, named as runsc restore looks for them
// (pkg/sentry/state/checkpointfiles).
var imageFiles = []string{"checkpoint.img", "pages_meta.img", "pages.img"}

// checkpointCall saves sandbox id into folder dir (which exists) through
// its control socket, uncompressed, leaving it running (or paused, if it
// was).
func (rs *runsc) checkpointCall(ctx context.Context, id, dir string) error {
	opts := saveOpts{Metadata: map[string]string{"compression": "none"}, HavePagesFile: true, Resume: true}
	defer func() {
		for _, f := range opts.Files {
			f.Close()
		}
	}()
	for _, name := range imageFiles {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
		if err != nil {
			return err
		}
		opts.Files = append(opts.Files, f)
	}
	return rs.control(ctx, id, ctlCheckpoint, &opts)
}
