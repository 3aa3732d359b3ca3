package session

import "fmt"

// Status is where a session is in its life. Its values are the API's and
// the store's strings (api.StatusRunning, …), so that records and answers
// stay byte for byte what they were.
type Status string

// The statuses of a session.
const (
	// Running has a sandbox that runs. A new session is running from the
	// start: its record says so before its first sandbox is up, as a
	// daemon that crashes then finds it (lost) on its next start.
	Running Status = "running"
	// Stopped has no sandbox, on purpose; its workspace stays.
	Stopped Status = "stopped"
	// Failed has no sandbox because it died or could not start; Reason
	// says why.
	Failed Status = "failed"
	// Paused keeps its sandbox, every process frozen.
	Paused Status = "paused"
	// Hibernated has no sandbox: its memory is saved on disk (runsc), and
	// its next start restores it.
	Hibernated Status = "hibernated"
)

// transitions are the moves a session's status may make, from the key to
// each value (as runc's libcontainer/state_linux.go transition()). Any
// other is refused: a bug, not a state.
//
//	          start            stop
//	(new) ─────────► running ───────► stopped
//	                  │   ▲  ◄───────    │
//	     sandbox died │   │   start      │ start failed
//	     or failed    ▼   │ start        ▼
//	                 failed ◄──────────────
//
//	running ──pause──► paused ──resume──► running
//	running ──hibernate──► hibernated ──wake──► running
//
// Running to running is a new session's first start; failed to failed a
// start of a failed session that fails again. A stop of a stopped or
// failed session changes nothing (it is not a move); a paused session
// stops or fails as a running one does. A hibernated session stops (its
// memory dropped), wakes, or fails to wake.
var transitions = map[Status][]Status{
	Running:    {Running, Stopped, Failed, Paused, Hibernated},
	Paused:     {Running, Stopped, Failed},
	Stopped:    {Running, Failed},
	Failed:     {Running, Failed},
	Hibernated: {Running, Stopped, Failed},
}

// TransitionError is a move the table refuses. It is a conflict (409),
// not an internal error: the daemon asks for a move only while it holds
// the session's operation, so the one way it meets a refused move is a
// race with the sandbox's own end (it died while being paused or resumed,
// and its watcher failed the session). The session changed under the
// caller, who is told so and finds it as it is now; the table refused
// the move, so the state stays whole either way.
type TransitionError struct {
	ID       string
	From, To Status
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("session %s cannot go from %s to %s", e.ID, e.From, e.To)
}

// Conflict makes a refused move errdefs.ErrConflict's class.
func (e *TransitionError) Conflict() {}

// allowed says whether a session may go from one status to the other.
func allowed(from, to Status) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}
