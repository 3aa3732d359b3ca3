package mcpserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// The fake daemon's code contexts: created as c1, c2…, listed default
// first, deleted; default is never deleted.
func (f *fakeDaemon) contextRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/sessions/{id}/contexts", f.createContext)
	mux.HandleFunc("GET /v1/sessions/{id}/contexts", f.listContexts)
	mux.HandleFunc("DELETE /v1/sessions/{id}/contexts/{cid}", f.deleteContext)
}

// context is the index of session id's context cid, or -1.
func (f *fakeDaemon) context(id, cid string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.IndexFunc(f.contexts[id], func(c api.CodeContext) bool { return c.ID == cid })
}

func (f *fakeDaemon) createContext(w http.ResponseWriter, r *http.Request) {
	id, ok := f.session(w, r)
	if !ok {
		return
	}
	var req api.CreateContextRequest
	_ = json.NewDecoder(r.Body).Decode(&req)
	if req.From != "" && req.From != api.ContextDefault && f.context(id, req.From) < 0 {
		notFound(w, "context "+req.From)
		return
	}
	c := api.CodeContext{Language: "python", Cwd: "/workspace", CreatedAt: time.Unix(0, 0).UTC()}
	if req.Language != "" {
		c.Language = req.Language
	}
	if req.Cwd != "" {
		c.Cwd = "/workspace/" + req.Cwd
	}
	f.mu.Lock()
	f.n++
	c.ID = fmt.Sprintf("c%d", f.n)
	f.contexts[id] = append(f.contexts[id], c)
	f.mu.Unlock()
	answer(w, 201, c)
}

func (f *fakeDaemon) listContexts(w http.ResponseWriter, r *http.Request) {
	id, ok := f.session(w, r)
	if !ok {
		return
	}
	f.mu.Lock()
	list := append([]api.CodeContext{{ID: api.ContextDefault, Language: "python", Cwd: "/workspace"}}, f.contexts[id]...)
	f.mu.Unlock()
	answer(w, 200, api.ContextList{Contexts: list})
}

func (f *fakeDaemon) deleteContext(w http.ResponseWriter, r *http.Request) {
	id, ok := f.session(w, r)
	if !ok {
		return
	}
	cid := r.PathValue("cid")
	if cid == api.ContextDefault {
		answer(w, 400, api.ErrorBody{Error: api.ErrorDetail{Code: "invalid_argument", Message: "the default context is never deleted"}})
		return
	}
	i := f.context(id, cid)
	if i < 0 {
		notFound(w, "context "+cid)
		return
	}
	f.mu.Lock()
	f.contexts[id] = slices.Delete(f.contexts[id], i, i+1)
	f.mu.Unlock()
	w.WriteHeader(204)
}
