package mcpserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/sandboxd/sandboxd/api"
)

// undo is POST /v1/sessions/{id}/undo as the daemon answers it: a session
// keeps its last Checkpoints executions (those it ran, less those undone),
// and refuses to go back further (409), or at all without checkpoints.
func (f *fakeDaemon) undo(w http.ResponseWriter, r *http.Request) {
	id, ok := f.session(w, r)
	if !ok {
		return
	}
	var req api.UndoRequest
	_ = json.NewDecoder(r.Body).Decode(&req)
	steps := req.Steps
	if steps == 0 {
		steps = 1
	}
	if steps < 1 || steps > 16 {
		answer(w, 400, api.ErrorBody{Error: api.ErrorDetail{Code: "invalid_argument", Message: fmt.Sprintf("steps %d: undo goes back 1 to 16 executions", steps)}})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	k := f.sessions[id].Checkpoints
	if k == 0 {
		answer(w, 409, api.ErrorBody{Error: api.ErrorDetail{Code: "conflict", Message: "session " + id + " keeps no checkpoints: create it with checkpoints (1 to 16)"}})
		return
	}
	ran := 0
	for _, e := range f.execs {
		if strings.HasPrefix(e, id+":") || strings.HasPrefix(e, id+"/") {
			ran++
		}
	}
	kept := min(ran-f.undone[id], k)
	if steps > kept {
		answer(w, 409, api.ErrorBody{Error: api.ErrorDetail{Code: "conflict", Message: fmt.Sprintf("session %s keeps %d checkpoints: it cannot go back %d executions", id, kept, steps)}})
		return
	}
	if f.undone == nil {
		f.undone = map[string]int{}
	}
	f.undone[id] += steps
	answer(w, 200, api.UndoResult{Undone: steps})
}
