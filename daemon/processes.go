package daemon

import (
	"context"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/process"
	"github.com/sandboxd/sandboxd/daemon/sandboxfs"
)

// Processes serves the API's processes (package process owns them): the
// daemon says which session a caller reaches, awake if asked, and the
// rules of a command.
func (d *Daemon) Processes() *process.Manager {
	return process.NewManager(process.Options{
		Find: func(ctx context.Context, id string, awake bool) (*process.Target, error) {
			var s *session
			var err error
			if awake {
				s, err = d.lookupAwake(ctx, id)
			} else {
				s, err = d.lookup(ctx, id)
			}
			if err != nil {
				return nil, err
			}
			t := &process.Target{ID: s.ID(), FS: d.sessionFS(s), Book: &s.procs,
				Cwd: func(cwd string) (string, error) { return cwdOf(d.tmpl, s, cwd) },
				Env: func(req map[string]string) []string { return envList(mergeEnv(s.Snapshot().Env, req)) }}
			if sb := s.Sandbox(); sb != nil {
				t.Sandbox = sb
			}
			return t, nil
		},
		Check: checkCommand,
		Now:   now,
	})
}

// checkCommand checks a command to run as is, and says its working folder:
// "" if none is given, or one under /home, for cwdOf to settle.
func checkCommand(argv []string, env map[string]string, cwd string) (string, error) {
	if len(argv) == 0 || argv[0] == "" {
		return "", errdefs.ErrInvalidArgument.WithMessage("argv is required: the command and its arguments, e.g. [\"bash\"]")
	}
	n := 0
	for _, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return "", errdefs.ErrInvalidArgument.WithMessage("an argument contains a NUL byte")
		}
		n += len(a)
	}
	if n > maxCodeBytes {
		return "", api.Errorf(api.ErrPayloadTooLarge, "the command is %d bytes, over the limit of %d", n, maxCodeBytes)
	}
	if err := checkEnv(env); err != nil {
		return "", err
	}
	if err := process.CheckExecSize(argv, envList(env)); err != nil {
		return "", err
	}
	if cwd == "" || deferredCwd(cwd) {
		return cwd, nil
	}
	return sandboxfs.Cwd(cwd)
}
