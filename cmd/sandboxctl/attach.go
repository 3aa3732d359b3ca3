package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"

	"github.com/sandboxd/sandboxd/api"
)

// attachExec runs argv in session id with its streams attached to
// sandboxctl's (exec -i, -t): with tty, a pseudo-terminal the size of
// sandboxctl's, the local terminal in raw mode meanwhile (keys, ^C and ^D
// included, go to the process) and its size changes passed on; with
// interactive, standard input is sent until its end. It ends with the
// process's exit status.
func (a *app) attachExec(ctx context.Context, id string, argv []string, env map[string]string, cwd string, tty, interactive bool) error {
	req := &api.AttachRequest{Argv: argv, Env: env, Cwd: cwd, TTY: tty}
	in := int(os.Stdin.Fd())
	localTTY := tty && term.IsTerminal(in)
	if tty {
		if w, h, err := term.GetSize(int(os.Stdout.Fd())); err == nil {
			req.Rows, req.Cols = uint16(h), uint16(w)
		} else if w, h, err := term.GetSize(in); err == nil {
			req.Rows, req.Cols = uint16(h), uint16(w)
		}
	}
	at, err := a.client().Attach(ctx, id, req)
	if err != nil {
		return err
	}
	defer at.Close()
	if localTTY {
		old, err := term.MakeRaw(in)
		if err != nil {
			return fmt.Errorf("cannot put the terminal in raw mode: %w", err)
		}
		defer term.Restore(in, old)
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		go func() {
			for range winch {
				if w, h, err := term.GetSize(in); err == nil {
					_ = at.Resize(uint16(h), uint16(w))
				}
			}
		}()
	}
	if interactive {
		go func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := os.Stdin.Read(buf)
				if n > 0 {
					if _, werr := at.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					if errors.Is(err, io.EOF) {
						_ = at.CloseStdin()
					}
					return
				}
			}
		}()
	} else if err := at.CloseStdin(); err != nil {
		return err
	}
	code, err := at.Wait(os.Stdout, os.Stderr)
	if err != nil {
		return err
	}
	if code != 0 {
		return exitError{code}
	}
	return nil
}
