package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/api"
)

func newEventsCmd(a *app) *cobra.Command {
	var since, until string
	var f api.EventFilter
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Stream what happens to sessions, as it happens",
		Long: `Stream session events as they happen: created, started, stopped, paused, resumed,
restarted, deleted, failed, oom, timeout, interrupted, restored, lost; and MCP calls.
You see your own sessions' events (root: everyone's). Ctrl-C ends the stream.

--since and --until take an RFC 3339 time, Unix seconds, or a duration: --since 10m
starts 10 minutes ago (the daemon replays the recent events it keeps), --until 10m
ends the stream 10 minutes from now.`,
		Example: `  sandboxctl events
  sandboxctl events --since 1h --until 0s      # the last hour, then exit
  sandboxctl events --session $id --type session --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			now := time.Now()
			var err error
			if f.Since, err = eventTime("since", since, now, -1); err != nil {
				return err
			}
			if f.Until, err = eventTime("until", until, now, +1); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			out := cmd.OutOrStdout()
			enc := json.NewEncoder(out)
			err = a.client().Events(ctx, f, func(ev *api.SessionEvent) error {
				if asJSON {
					return enc.Encode(ev)
				}
				_, err := fmt.Fprintln(out, eventLine(ev))
				return err
			})
			if errors.Is(err, context.Canceled) && ctx.Err() != nil {
				return nil // Ctrl-C: the user is done watching
			}
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&since, "since", "", "start this far back: an RFC 3339 time, Unix seconds, or a duration such as 10m")
	fs.StringVar(&until, "until", "", "end then: an RFC 3339 time, Unix seconds, or a duration from now such as 10m")
	fs.StringArrayVar(&f.Sessions, "session", nil, "only this session's events (repeatable)")
	fs.StringArrayVar(&f.Types, "type", nil, "only events of this type: "+strings.Join(api.EventTypes(), " or ")+" (repeatable)")
	fs.BoolVar(&asJSON, "json", false, "print each event as one line of JSON, as the API sends it")
	_ = cmd.RegisterFlagCompletionFunc("session", a.completeSessions)
	_ = cmd.RegisterFlagCompletionFunc("type", cobra.FixedCompletions(api.EventTypes(), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("since", cobra.NoFileCompletions)
	_ = cmd.RegisterFlagCompletionFunc("until", cobra.NoFileCompletions)
	return cmd
}

// eventTime reads --since or --until: a time as the API takes it, or a
// duration from now, back (sign -1, for --since: "10m" is ten minutes ago)
// or ahead (sign +1, for --until: ten minutes from now).
func eventTime(flag, v string, now time.Time, sign time.Duration) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		return now.Add(sign * d), nil
	}
	t, err := api.ParseEventTime(v)
	if err != nil {
		return time.Time{}, fmt.Errorf("bad --%s %q: give an RFC 3339 time such as 2026-11-23T15:04:05Z, Unix seconds, or a duration such as 10m", flag, v)
	}
	return t, nil
}

// eventLine is an event as a person reads it:
// 2026-11-23T15:04:05Z session stopped 0123abcd (idle timeout)
// 2026-11-23T15:04:05Z mcp 0123abcd search.web_search ok 120ms
func eventLine(ev *api.SessionEvent) string {
	parts := []string{ev.Time.UTC().Format(time.RFC3339), ev.Type}
	if ev.Action != "" {
		parts = append(parts, ev.Action)
	}
	parts = append(parts, ev.SessionID)
	if ev.Server != "" || ev.Tool != "" {
		parts = append(parts, ev.Server+"."+ev.Tool)
	}
	if ev.Outcome != "" {
		parts = append(parts, ev.Outcome)
	}
	if ev.DurationMS != nil {
		parts = append(parts, fmt.Sprintf("%dms", *ev.DurationMS))
	}
	line := strings.Join(parts, " ")
	if ev.Reason != "" {
		line += " (" + ev.Reason + ")"
	}
	return line
}
