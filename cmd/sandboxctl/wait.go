package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/api"
)

// errWaitDone ends the event stream once the session stopped.
var errWaitDone = errors.New("done")

func newWaitCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "wait ID...",
		Short: "Wait until sessions stop, and print why",
		Long: `Wait until each session is no longer running or paused (stopped by
request, idle, its lifetime, its sandbox died, or deleted) and print why, a
line a session. Exit status: 0 when every session stopped, 1 if one failed
or could not be waited for.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, ids []string) error {
			failed := false
			err := forEach(cmd.Context(), ids, func(ctx context.Context, id string) error {
				reason, ok, err := waitStopped(ctx, a, id)
				if err != nil {
					return err
				}
				fmt.Printf("%s %s\n", id, reason)
				failed = failed || !ok
				return nil
			})
			if err == nil && failed {
				return exitError{1}
			}
			return err
		},
	}
}

// waitStopped waits until session id stops; it says why, and false if it
// failed. The events from just before its status was read are replayed, so
// that no change between the two is missed.
func waitStopped(ctx context.Context, a *app, id string) (string, bool, error) {
	c := a.client()
	since := time.Now().Add(-time.Second)
	s, err := c.GetSession(ctx, id)
	if err != nil {
		return "", false, err
	}
	if reason, ok, done := ended(s.Status, s.Reason); done {
		return reason, ok, nil
	}
	var reason string
	var ok bool
	err = c.Events(ctx, api.EventFilter{Since: since, Sessions: []string{s.ID}, Types: []string{api.EventTypeSession}}, func(ev *api.SessionEvent) error {
		switch ev.Action {
		case api.ActionStopped:
			reason, ok = "stopped: "+ev.Reason, true
		case api.ActionFailed, api.ActionLost:
			reason, ok = ev.Action+": "+ev.Reason, false
		case api.ActionDeleted:
			reason, ok = "deleted", true
		default:
			return nil
		}
		return errWaitDone
	})
	if errors.Is(err, errWaitDone) {
		return strings.TrimSuffix(reason, ": "), ok, nil
	}
	if err == nil {
		err = errors.New("the daemon ended the event stream")
	}
	return "", false, err
}

// ended says whether a session of status has stopped, why, and whether it
// ended well.
func ended(status, reason string) (string, bool, bool) {
	switch status {
	case api.StatusStopped:
		return strings.TrimSuffix("stopped: "+reason, ": "), true, true
	case api.StatusFailed:
		return strings.TrimSuffix("failed: "+reason, ": "), false, true
	}
	return "", false, false
}
