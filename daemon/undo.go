package daemon

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/sandboxfs"
	"github.com/sandboxd/sandboxd/isolation"
	"github.com/sandboxd/sandboxd/isolation/volume"
)

// Undo: a session made with checkpoints: K keeps the state before each of
// its last K executions. Before an execution, the daemon takes /workspace's
// checkpoint (sandboxfs.Checkpoints: a manifest, and copies of the files
// changed since the last one, on the session's own disk) and the agent
// parks a copy of the interpreter that runs it (forked, stopped: its
// copy-on-write pages count in the session's memory). Undo of N steps
// pops the last N executions: each interpreter they ran in takes back its
// parked copy from before them, and /workspace returns to the checkpoint
// before the first of them. The history is the sandbox's: a new sandbox
// (a stop and start, a restart, a lost sandbox replaced) starts with none.
//
// A session's steps are kept in <session>/fs/checkpoints/steps.json beside
// the workspace's checkpoints (<session>/fs/checkpoints/workspace), so a
// daemon restart keeps them, with the sandbox and its parked copies.

// Undo serves POST /v1/sessions/{id}/undo.
type Undo struct{ d *Daemon }

// maxCheckpoints bounds a session's checkpoints (API.md: 0–16).
const maxCheckpoints = 16

// jsDefaultContext is the agent's name for the default context's
// JavaScript interpreter (_sandboxd_agent.JAVASCRIPT_DEFAULT).
const jsDefaultContext = "default-javascript"

// undoState is a session's undo history in memory: loaded from its folder
// at first use, dropped when the session gets a new sandbox.
type undoState struct {
	// mu is held by an execution of a session with checkpoints, from its
	// checkpoint to its step's record, and by an undo: the two never
	// interleave.
	mu   sync.Mutex
	hist *undoHistory
	// stale is set (without mu: a lost execution's restart holds it) when
	// the session's sandbox is replaced: the history is dropped at its
	// next use.
	stale atomic.Bool
}

// undoHistory is what undo can go back through.
type undoHistory struct {
	dir       string
	workspace *sandboxfs.Checkpoints
	Next      uint64     `json:"next"`
	Steps     []undoStep `json:"steps"`
}

// undoStep is one execution that can be undone: the workspace's checkpoint
// id before it, and the interpreter it ran in (Parked: the agent parked a
// copy of it; false for a shell or JavaScript execution, which has none
// to park, and for a Python one whose copy the agent could not make:
// Python says which).
type undoStep struct {
	ID      uint64 `json:"id"`
	Context string `json:"context,omitempty"`
	Parked  bool   `json:"parked,omitempty"`
	Python  bool   `json:"python,omitempty"`
}

// checkpointsDir is session id's undo folder: on its own disk, beside
// what the sandbox sees.
func (l layout) checkpointsDir(id string) string {
	return filepath.Join(volume.Root(l.session(id)), "checkpoints")
}

// history is s's undo history, loaded (or dropped, if stale) now. The
// caller holds s.undo.mu.
func (u Undo) history(s *session) (*undoHistory, error) {
	d := u.d
	dir := d.paths.checkpointsDir(s.ID())
	if s.undo.stale.Swap(false) {
		s.undo.hist = nil
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
	}
	if s.undo.hist != nil {
		return s.undo.hist, nil
	}
	h := &undoHistory{dir: dir, Next: 1}
	b, err := os.ReadFile(filepath.Join(dir, "steps.json"))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		if err := json.Unmarshal(b, h); err != nil {
			return nil, fmt.Errorf("session %s's undo steps: %w", s.ID(), err)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if h.workspace, err = sandboxfs.OpenCheckpoints(d.sessionFS(s), filepath.Join(dir, "workspace")); err != nil {
		return nil, err
	}
	s.undo.hist = h
	return h, nil
}

// save writes h's steps, whole.
func (h *undoHistory) save() error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	tmp := filepath.Join(h.dir, "steps.json.new")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(h.dir, "steps.json"))
}

// forget drops the undo history: the session's sandbox is new. It takes
// no lock (a lost execution's restart calls it while the execution holds
// mu).
func (st *undoState) forget() { st.stale.Store(true) }

// before takes /workspace's checkpoint before an execution of s in agent
// context cx, and holds s's undo lock until done is called with whether
// the agent parked a copy of the interpreter (done must be called once).
func (u Undo) before(ctx context.Context, s *session, cx, language string, keep int) (done func(parked bool), err error) {
	s.undo.mu.Lock()
	h, err := u.history(s)
	if err == nil {
		err = h.workspace.Take(ctx, h.Next)
	}
	if err != nil {
		s.undo.mu.Unlock()
		if errdefs.IsResourceExhausted(err) {
			return nil, err
		}
		return nil, fmt.Errorf("session %s's checkpoint: %w", s.ID(), err)
	}
	id := h.Next
	h.Next++
	return func(parked bool) {
		defer s.undo.mu.Unlock()
		if s.undo.stale.Load() {
			return // the sandbox was replaced meanwhile: no history
		}
		h.Steps = append(h.Steps, undoStep{ID: id, Context: undoContext(cx, language), Parked: parked, Python: language == api.LanguagePython})
		if n := len(h.Steps) - keep; n > 0 {
			h.Steps = h.Steps[n:]
		}
		err := h.workspace.Keep(len(h.Steps))
		if err == nil {
			err = h.save()
		}
		if err != nil {
			u.d.log.Warn("record an undo step", "session", s.ID(), "err", err)
		}
	}, nil
}

// Undo returns session id's interpreters and /workspace to before its
// last req.Steps executions (default 1).
func (u Undo) Undo(ctx context.Context, id string, req *api.UndoRequest) (*api.UndoResult, error) {
	d := u.d
	s, err := d.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	rec := s.Snapshot()
	if rec.Checkpoints == 0 {
		return nil, api.Errorf(errdefs.ErrFailedPrecondition, "session %s keeps no checkpoints: create it with checkpoints (1 to %d)", rec.ID, maxCheckpoints)
	}
	steps := cmp.Or(req.Steps, 1)
	if steps < 1 || steps > maxCheckpoints {
		return nil, api.Errorf(errdefs.ErrInvalidArgument, "steps %d: undo goes back 1 to %d executions", steps, maxCheckpoints)
	}
	s.undo.mu.Lock()
	defer s.undo.mu.Unlock()
	sb, reset, err := d.claimAwake(ctx, s)
	if err != nil {
		return nil, err
	}
	defer s.ReleaseExec()
	if reset {
		s.SetResetUntold() // the next execution's to say
	}
	h, err := u.history(s)
	if err != nil {
		return nil, err
	}
	if steps > len(h.Steps) {
		return nil, api.Errorf(errdefs.ErrFailedPrecondition, "session %s keeps %d checkpoints: it cannot go back %d executions", rec.ID, len(h.Steps), steps)
	}
	popped := h.Steps[len(h.Steps)-steps:]
	per := map[string]int{}
	var order []string
	// Going back over a Python execution whose interpreter was not copied
	// would take /workspace back without it: refused, rather than half
	// done, saying how far undo can go.
	for i := len(popped) - 1; i >= 0; i-- {
		if popped[i].Python && !popped[i].Parked {
			return nil, api.Errorf(errdefs.ErrFailedPrecondition, "session %s's interpreter was not copied before one of those executions (its sandbox's agent predates undo, or the copy failed): undo can go back %d executions", rec.ID, len(popped)-1-i)
		}
	}
	for _, st := range popped {
		if !st.Parked {
			continue
		}
		if per[st.Context] == 0 {
			order = append(order, st.Context)
		}
		per[st.Context]++
	}
	for _, cx := range order {
		if _, err := sb.Undo(ctx, cx, per[cx]); err != nil {
			if errors.Is(err, isolation.ErrUndoUnsupported) {
				return nil, api.Errorf(errdefs.ErrFailedPrecondition, "session %s's sandbox was started by an older sandboxd, whose interpreter keeps no copies: restart the session to use undo", rec.ID)
			}
			return nil, fmt.Errorf("session %s's interpreter: %w", rec.ID, err)
		}
	}
	if err := h.workspace.Restore(ctx, popped[0].ID); err != nil {
		return nil, fmt.Errorf("session %s's /workspace: %w", rec.ID, err)
	}
	h.Steps = h.Steps[:len(h.Steps)-steps]
	if err := h.save(); err != nil {
		return nil, err
	}
	return &api.UndoResult{Undone: steps}, nil
}

// undoContext is the agent's name of the interpreter an execution of
// language runs in, in the session's context cx ("": the default one).
func undoContext(cx, language string) string {
	if cx == "" && language == api.LanguageJavaScript {
		return jsDefaultContext
	}
	return cx
}
