package daemon

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/sandboxfs"
)

// maxRunFiles bounds the files of one one-shot run.
const maxRunFiles = 1000

// Run is a one-shot execution: a fresh sandbox, the given files, the code,
// and nothing left afterwards.
func (d *Daemon) Run(ctx context.Context, req *api.RunRequest, onEvent func(api.Event)) (*api.Execution, error) {
	exec := &api.ExecRequest{Language: req.Language, Code: req.Code}
	if req.TimeoutS != nil {
		t := float64(*req.TimeoutS)
		exec.TimeoutS = &t
	}
	if req.DeadlineS != nil {
		// A run's sandbox lives as long as its code: its timeout_s is
		// the limit there is.
		return nil, errdefs.ErrInvalidArgument.WithMessage("deadline_s is for sessions: a run ends with its code (use timeout_s)")
	}
	if len(req.Files) > maxRunFiles {
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "too many files (%d): at most %d", len(req.Files), maxRunFiles)
	}
	type file struct {
		root sandboxfs.Root
		rel  string
		data []byte
	}
	files := make([]file, 0, len(req.Files))
	for i, f := range req.Files {
		root, rel, err := sandboxfs.Split(f.Path)
		if err != nil {
			return nil, err
		}
		data, err := base64.StdEncoding.DecodeString(f.ContentBase64)
		if err != nil {
			return nil, api.Errorf(errdefs.ErrInvalidArgument, "files[%d].content_base64 is not valid base64: %v", i, err)
		}
		files = append(files, file{root, rel, data})
	}
	// Check the code before paying for a sandbox.
	if _, err := checkExec(&d.cfg, exec, d.cfg.Defaults.TimeoutS); err != nil {
		return nil, err
	}
	s, err := d.newSession(ctx, &req.CreateSessionRequest, false)
	if err != nil {
		return nil, err
	}
	// The sandbox goes after the answer, off the caller's clock (Close
	// waits for it); its place under the quotas is free at once, as it is
	// dying.
	d.background.Add(1)
	defer func() {
		d.sessions.release(s.Snapshot().OwnerUID)
		go func() {
			defer d.background.Done()
			if err := d.launch.destroy(s); err != nil {
				d.log.Warn("remove one-shot sandbox", "session", s.ID(), "err", err)
			}
		}()
	}()
	fs := d.sessionFS(s)
	for _, f := range files {
		if _, err := fs.Write(f.root, f.rel, bytes.NewReader(f.data), d.cfg.MaxUploadBytes); err != nil {
			return nil, fmt.Errorf("write %s/%s: %w", f.root, f.rel, err)
		}
	}
	return d.exec(ctx, s, exec, onEvent)
}
