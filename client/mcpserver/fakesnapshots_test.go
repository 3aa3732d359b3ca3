package mcpserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// fakeSnapshots is the fake daemon's snapshots, made as p1, p2…, and what
// each session made from one (a fork's too) was made from.
type fakeSnapshots struct {
	list     []api.Snapshot
	madeFrom map[string]string // session id -> snapshot id
	forks    int               // the fork snapshots made, p-f1…
}

func (f *fakeDaemon) snapshotRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/sessions/{id}/snapshots", f.createSnapshot)
	mux.HandleFunc("POST /v1/sessions/{id}/fork", f.fork)
	mux.HandleFunc("GET /v1/snapshots", f.listSnapshots)
}

func (f *fakeDaemon) createSnapshot(w http.ResponseWriter, r *http.Request) {
	id, ok := f.session(w, r)
	if !ok {
		return
	}
	var req api.CreateSnapshotRequest
	_ = json.NewDecoder(r.Body).Decode(&req)
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.Name != "" && slices.ContainsFunc(f.snaps.list, func(s api.Snapshot) bool { return s.Name == req.Name }) {
		answer(w, 409, api.ErrorBody{Error: api.ErrorDetail{Code: "conflict", Message: "snapshot " + req.Name + " exists"}})
		return
	}
	sn := api.Snapshot{ID: fmt.Sprintf("p%d", len(f.snaps.list)+1), SessionID: id, Name: req.Name, Template: f.sessions[id].Template,
		Runtime: "runc", SizeMB: 2, CreatedAt: time.Unix(0, 0).UTC()}
	f.snaps.list = append(f.snaps.list, sn)
	answer(w, 201, sn)
}

func (f *fakeDaemon) listSnapshots(w http.ResponseWriter, _ *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	answer(w, 200, api.SnapshotList{Snapshots: append([]api.Snapshot{}, f.snaps.list...)})
}

// createFromSnapshot is POST /v1/sessions with a snapshot: the sessions
// take its template; settings beside it are refused, as the daemon does.
func (f *fakeDaemon) createFromSnapshot(w http.ResponseWriter, req *api.CreateSessionRequest) {
	if req.Template != "" || req.MemoryMB != nil || req.Network != "" {
		answer(w, 400, api.ErrorBody{Error: api.ErrorDetail{Code: "invalid_argument", Message: "a session made from a snapshot takes the snapshot's settings"}})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.IndexFunc(f.snaps.list, func(s api.Snapshot) bool { return s.ID == req.Snapshot || s.Name == req.Snapshot })
	if i < 0 {
		notFound(w, "snapshot "+req.Snapshot)
		return
	}
	ss := f.fromSnapshotLocked(f.snaps.list[i], req, max(req.Count, 1))
	if req.Count == 0 {
		answer(w, 201, ss[0])
		return
	}
	answer(w, 201, api.SessionList{Sessions: ss})
}

// fromSnapshotLocked makes n sessions from sn.
func (f *fakeDaemon) fromSnapshotLocked(sn api.Snapshot, req *api.CreateSessionRequest, n int) []api.Session {
	if f.snaps.madeFrom == nil {
		f.snaps.madeFrom = map[string]string{}
	}
	var out []api.Session
	for range n {
		f.n++
		s := &api.Session{ID: fmt.Sprintf("s%d", f.n), Template: sn.Template, Status: "running", Network: "none", Labels: req.Labels,
			CreatedAt: time.Unix(0, 0).UTC(), Volumes: req.Volumes}
		f.sessions[s.ID] = s
		f.snaps.madeFrom[s.ID] = sn.ID
		out = append(out, *s)
	}
	return out
}

func (f *fakeDaemon) fork(w http.ResponseWriter, r *http.Request) {
	id, ok := f.session(w, r)
	if !ok {
		return
	}
	var req api.ForkRequest
	_ = json.NewDecoder(r.Body).Decode(&req)
	if req.Count < 0 || req.Count > api.MaxCount {
		answer(w, 400, api.ErrorBody{Error: api.ErrorDetail{Code: "invalid_argument", Message: fmt.Sprintf("count %d: 1 to %d", req.Count, api.MaxCount)}})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snaps.forks++
	src := f.sessions[id]
	sn := api.Snapshot{ID: fmt.Sprintf("p-f%d", f.snaps.forks), SessionID: id, Template: src.Template}
	answer(w, 201, api.SessionList{Sessions: f.fromSnapshotLocked(sn, &api.CreateSessionRequest{Labels: src.Labels, Volumes: src.Volumes}, max(req.Count, 1))})
}
