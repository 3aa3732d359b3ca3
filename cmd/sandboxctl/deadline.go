package main

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/api"
)

// parseDeadline reads --deadline: a Go duration (10m, 1h30m) or whole
// seconds, as deadline_s. A duration with a fraction of a second rounds
// up: a session never ends earlier than asked.
func parseDeadline(v string) (int, error) {
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("bad --deadline %q: give a duration of 0 or more, such as 10m or 3600", v)
		}
		return n, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad --deadline %q: give a duration such as 10m, 1h30m or 3600 (seconds)", v)
	}
	s := math.Ceil(d.Seconds())
	if s > math.MaxInt32 {
		return 0, fmt.Errorf("bad --deadline %q: too far away", v)
	}
	return int(s), nil
}

// deadlineText is a session's deadline for a person: the time and how far
// off it is, or "none".
func deadlineText(s *api.Session) string {
	if s.Deadline == nil {
		return "none"
	}
	left := time.Until(*s.Deadline).Round(time.Second)
	if left <= 0 {
		return s.Deadline.Format(time.RFC3339) + " (passed)"
	}
	return fmt.Sprintf("%s (in %s)", s.Deadline.Format(time.RFC3339), left)
}

// newUpdateCmd changes the settings of a session that change while it
// lives: its deadline.
func newUpdateCmd(a *app) *cobra.Command {
	var deadline string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "update ID --deadline DURATION",
		Short: "Change a session's deadline",
		Long: `Change a session's deadline: it ends (is stopped, its files kept) that long
from now, whatever it is doing, earlier or later than its deadline before.
--deadline 0 removes the deadline. The daemon's max_session_lifetime_s, if
it has one, still ends the session first.`,
		Example: `  sandboxctl update 3f2a --deadline 30m
  sandboxctl update 3f2a --deadline 0`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeSessions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("deadline") {
				return fmt.Errorf("nothing to change: give --deadline DURATION (0 removes the deadline)")
			}
			n, err := parseDeadline(deadline)
			if err != nil {
				return err
			}
			s, err := a.client().UpdateSession(cmd.Context(), args[0], api.UpdateSessionRequest{DeadlineS: &n})
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(os.Stdout, s)
			}
			fmt.Printf("%s deadline: %s\n", s.ID, deadlineText(s))
			return nil
		},
	}
	cmd.Flags().StringVar(&deadline, "deadline", "", "end the session this long from now: a duration such as 30m or 1h, or seconds (0 removes the deadline)")
	_ = cmd.RegisterFlagCompletionFunc("deadline", cobra.NoFileCompletions)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the whole session as JSON")
	return cmd
}
