package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/logging"
	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/store"
)

// attachDrain is how long output is still relayed after the process ended:
// a child it left holding the terminal or a pipe would keep it open.
const attachDrain = time.Second

// Attach starts a process in a session's sandbox for a client attached to
// its standard streams (docker's exec -i and -it): its command as is (no
// shell), the session's environment and the request's, as the sandbox's
// user. The session counts as busy (no idle stop) until serve returns.
// serve relays frames (api.WriteFrame) between conn and the process until
// it ends, then says its exit status; it must be called once, and with a
// nil conn (the upgrade failed) it ends the process.
func (d *Daemon) Attach(ctx context.Context, id string, req *api.AttachRequest) (serve func(conn io.ReadWriteCloser), err error) {
	cwd, err := checkCommand(req.Argv, req.Env, req.Cwd)
	if err != nil {
		return nil, err
	}
	rows, cols := req.Rows, req.Cols
	if rows == 0 || cols == 0 {
		rows, cols = 24, 80
	}
	s, err := d.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	if cwd, err = cwdOf(d.tmpl, s, cwd); err != nil {
		return nil, err
	}
	sb, _, err := d.claimAwake(ctx, s)
	if err != nil {
		return nil, err
	}
	env := envList(mergeEnv(s.Snapshot().Env, req.Env))
	p, err := sb.Spawn(&isolation.ProcessOptions{Argv: req.Argv, Env: env, Cwd: cwd, TTY: req.TTY, Rows: rows, Cols: cols})
	if err != nil {
		s.ReleaseExec()
		// The command is the caller's: one that does not exist or cannot
		// run is theirs to fix, as a shell's 127 and 126 say.
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "cannot run %s: %v", api.Quote(req.Argv[0]), err)
	}
	log := logging.From(ctx).With("session", sb.ID())
	log.Info("process attached", "argv0", req.Argv[0], "tty", req.TTY)
	return func(conn io.ReadWriteCloser) {
		defer func() {
			s.Update(func(r *store.Record) { r.LastUsedAt = now() })
			s.ReleaseExec()
		}()
		code := relay(conn, p, log)
		log.Info("process detached", "argv0", req.Argv[0], "exit_code", code)
	}, nil
}

// relay pumps frames between conn and p until p ends, then sends its exit
// status and closes conn: its input from FrameStdin (FrameCloseStdin ends
// it), FrameResize to its terminal, its output as FrameStdout and
// FrameStderr. A client that hangs up (or sends what is not a frame) ends
// the process. nil conn ends it at once.
func relay(conn io.ReadWriteCloser, p *isolation.Process, log *slog.Logger) int {
	defer p.Close()
	if conn == nil {
		_ = p.Kill()
		code, _ := p.Wait()
		return code
	}
	defer conn.Close()
	var wmu sync.Mutex
	send := func(typ byte, b []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		return api.WriteFrame(conn, typ, b)
	}
	// Output, each stream to its frames, until it ends.
	var out sync.WaitGroup
	for typ, r := range map[byte]io.Reader{api.FrameStdout: p.Stdout(), api.FrameStderr: p.Stderr()} {
		if r == nil {
			continue
		}
		out.Go(func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := r.Read(buf)
				if n > 0 && send(typ, buf[:n]) != nil {
					return
				}
				if err != nil {
					return // EOF; EIO from a terminal whose last user left
				}
			}
		})
	}
	// Input, until the client closes.
	ended := make(chan struct{})
	go func() {
		var buf []byte
		stdinOpen := true
		for {
			typ, b, err := api.ReadFrame(conn, buf)
			if err != nil {
				select {
				case <-ended:
				default:
					if !errors.Is(err, io.EOF) {
						log.Info("attached client sent what is not a frame; ending its process", "err", err)
					}
					_ = p.Kill() // the client left
				}
				return
			}
			buf = b[:0]
			switch typ {
			case api.FrameStdin:
				if stdinOpen {
					if _, err := p.Stdin().Write(b); err != nil && !errors.Is(err, syscall.EPIPE) {
						stdinOpen = false
					}
				}
			case api.FrameCloseStdin:
				if stdinOpen {
					_ = p.Stdin().Close()
					stdinOpen = false
				}
			case api.FrameResize:
				if rows, cols, ok := api.ParseResize(b); ok && rows > 0 && cols > 0 {
					_ = p.Resize(rows, cols)
				}
			}
		}
	}()
	code, err := p.Wait()
	if err != nil {
		log.Warn("wait for an attached process", "err", err)
	}
	close(ended)
	// Output written before the end is still relayed; a child that keeps
	// the streams open is cut off after attachDrain.
	drained := make(chan struct{})
	go func() {
		out.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(attachDrain):
		p.Close()
		<-drained
	}
	_ = send(api.FrameExit, api.ExitPayload(code))
	return code
}
