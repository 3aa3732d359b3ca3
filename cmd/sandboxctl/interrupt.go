package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"time"
)

// leaveWithin is how soon a second Ctrl-C must follow the first to leave
// an execution instead of waiting for its interrupted answer.
const leaveWithin = 2 * time.Second

// interruptOnCtrlC makes Ctrl-C interrupt the execution running in
// session id, as in a terminal: the first asks the daemon to interrupt it
// (its answer, status interrupted, comes as usual); a second within
// leaveWithin calls leave, which ends the wait (a streaming call's hang-up
// interrupts it too). stop ends the handling and says whether the caller
// left.
func (a *app) interruptOnCtrlC(ctx context.Context, id string, leave context.CancelFunc) (stop func() bool) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt)
	done := make(chan struct{})
	var left atomic.Bool
	go func() {
		var last time.Time
		for {
			select {
			case <-done:
				return
			case <-sigs:
			}
			if !last.IsZero() && time.Since(last) < leaveWithin {
				left.Store(true)
				leave()
				return
			}
			last = time.Now()
			fmt.Fprintln(os.Stderr, "\nsandboxctl: interrupting the execution (Ctrl-C again to leave it)")
			go func() {
				ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				defer cancel()
				if _, err := a.client().Interrupt(ictx, id); err != nil {
					fmt.Fprintf(os.Stderr, "sandboxctl: interrupt: %v\n", err)
				}
			}()
		}
	}()
	return func() bool {
		signal.Stop(sigs)
		select {
		case <-done:
		default:
			close(done)
		}
		return left.Load()
	}
}
