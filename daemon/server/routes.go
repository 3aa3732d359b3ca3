package server

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// route is one operation of the API. query names the query parameters it
// takes: any other is refused, as an unknown JSON field is, so that a typo
// such as ?lable= never passes silently as "no filter".
type route struct {
	method string
	path   string
	query  []string
	h      handlerFunc
}

// table is every route of the API, GET first on each path so that Allow
// headers read naturally.
func (s *Server) table() []route {
	files := []string{"path", "format"}
	rs := []route{
		{"GET", "/v1/health", nil, s.health},
		{"GET", "/v1/info", nil, s.info},
		{"GET", "/v1/node", nil, s.node},
		{"POST", "/v1/node/drain", nil, s.drain},
		{"GET", "/v1/openapi.json", nil, s.openapi},
		{"GET", "/v1/sessions", []string{"label"}, s.listSessions},
		{"POST", "/v1/sessions", nil, s.createSession},
		{"GET", "/v1/sessions/{id}", nil, s.getSession},
		{"DELETE", "/v1/sessions/{id}", nil, s.deleteSession},
		{"PATCH", "/v1/sessions/{id}", nil, s.updateSession},
		{"POST", "/v1/sessions/{id}/stop", nil, s.lifecycle(s.b.StopSession)},
		{"POST", "/v1/sessions/{id}/start", nil, s.lifecycle(s.b.StartSession)},
		{"POST", "/v1/sessions/{id}/restart", nil, s.lifecycle(s.b.RestartSession)},
		{"POST", "/v1/sessions/{id}/pause", nil, s.lifecycle(s.b.PauseSession)},
		{"POST", "/v1/sessions/{id}/resume", nil, s.lifecycle(s.b.ResumeSession)},
		{"POST", "/v1/sessions/{id}/hibernate", nil, s.lifecycle(s.b.HibernateSession)},
		{"PATCH", "/v1/sessions/{id}/network", nil, s.setNetwork},
		{"POST", "/v1/sessions/{id}/packages", nil, s.packages},
		{"POST", "/v1/sessions/{id}/exec", nil, s.exec},
		{"POST", "/v1/sessions/{id}/interrupt", nil, s.interrupt},
		{"GET", "/v1/sessions/{id}/contexts", nil, s.contexts},
		{"POST", "/v1/sessions/{id}/contexts", nil, s.createContext},
		{"DELETE", "/v1/sessions/{id}/contexts/{cid}", nil, s.deleteContext},
		{"POST", "/v1/sessions/{id}/contexts/{cid}/restart", nil, s.restartContext},
		{"POST", "/v1/sessions/{id}/attach", nil, s.attach},
		{"GET", "/v1/sessions/{id}/processes", nil, s.processes},
		{"POST", "/v1/sessions/{id}/processes", nil, s.startProcess},
		{"DELETE", "/v1/sessions/{id}/processes/{pid}", []string{"signal"}, s.signalProcess},
		{"GET", "/v1/sessions/{id}/processes/{pid}/logs", []string{"offset"}, s.processLogs},
		{"GET", "/v1/sessions/{id}/processes/{pid}/output", []string{"follow", "from"}, s.processOutput},
		{"POST", "/v1/sessions/{id}/processes/{pid}/stdin", []string{"eof"}, s.processStdin},
		{"POST", "/v1/sessions/{id}/processes/{pid}/resize", nil, s.resizeProcess},
		{"POST", "/v1/sessions/{id}/processes/{pid}/signal", nil, s.signalProcessPost},
		{"GET", "/v1/sessions/{id}/executions", []string{"limit"}, s.executions},
		{"GET", "/v1/sessions/{id}/executions/{eid}", nil, s.execution},
		{"GET", "/v1/sessions/{id}/files", []string{"path", "format", "depth"}, s.getFile},
		{"PUT", "/v1/sessions/{id}/files", files, s.putFile},
		{"DELETE", "/v1/sessions/{id}/files", []string{"path"}, s.deleteFile},
		{"GET", "/v1/sessions/{id}/files/stat", []string{"path"}, s.statFile},
		{"POST", "/v1/sessions/{id}/files/mkdir", nil, s.mkdir},
		{"POST", "/v1/sessions/{id}/files/move", nil, s.moveFile},
		{"GET", "/v1/sessions/{id}/files/watch", []string{"path", "recursive"}, s.watchFiles},
		{"GET", "/v1/sessions/{id}/stats", nil, s.stats},
		{"POST", "/v1/run", nil, s.run},
		{"GET", "/v1/events", []string{"since", "until", "session", "type"}, s.events},
		{"GET", "/v1/templates", nil, s.listTemplates},
		{"POST", "/v1/templates", nil, s.addTemplate},
		{"GET", "/v1/templates/{name}", nil, s.getTemplate},
		{"DELETE", "/v1/templates/{name}", nil, s.deleteTemplate},
		{"PUT", "/v1/templates/{name}/rootfs", nil, s.importRootfs},
		{"GET", "/v1/volumes", nil, s.listVolumes},
		{"POST", "/v1/volumes", nil, s.createVolume},
		{"GET", "/v1/volumes/{name}", nil, s.getVolume},
		{"PATCH", "/v1/volumes/{name}", nil, s.updateVolume},
		{"DELETE", "/v1/volumes/{name}", nil, s.deleteVolume},
		{"GET", "/v1/volumes/{name}/files", []string{"path"}, s.getVolumeFile},
		{"PUT", "/v1/volumes/{name}/files", []string{"path"}, s.putVolumeFile},
		{"DELETE", "/v1/volumes/{name}/files", []string{"path"}, s.deleteVolumeFile},
		{"POST", "/v1/sessions/{id}/snapshots", nil, s.createSnapshot},
		{"POST", "/v1/sessions/{id}/fork", nil, s.fork},
		{"POST", "/v1/sessions/{id}/undo", nil, s.undo},
		{"GET", "/v1/snapshots", nil, s.listSnapshots},
		{"GET", "/v1/snapshots/{id}", nil, s.getSnapshot},
		{"DELETE", "/v1/snapshots/{id}", nil, s.deleteSnapshot},
		{"GET", "/v1/snapshots/{id}/export", nil, s.exportSnapshot},
		{"POST", "/v1/snapshots/import", []string{"name"}, s.importSnapshot},
	}
	if s.o.Metrics != nil {
		rs = append(rs, route{"GET", "/metrics", nil, s.metrics})
	}
	return rs
}

// portPaths are the port proxy's patterns: outside the table, as it takes
// every method and any query.
var portPaths = []string{"/v1/sessions/{id}/ports/{port}", "/v1/sessions/{id}/ports/{port}/{path...}"}

// routes registers each path once, without a method: with methods in its
// patterns, ServeMux would send a wrong method to the catch-all "/" (404)
// instead of answering 405, and its own 405 has no JSON body.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	byPath := map[string][]route{}
	for _, rt := range s.table() {
		byPath[rt.path] = append(byPath[rt.path], rt)
	}
	for path, rs := range byPath {
		mux.Handle(path, s.wrap(dispatch(rs)))
	}
	// The port proxy takes every method and passes the query on.
	for _, p := range portPaths {
		mux.Handle(p, s.wrap(s.ports))
	}
	mux.Handle(pprofPath, s.wrap(s.pprof))
	mux.Handle("/", s.wrap(s.notFound))
	return mux
}

// dispatch picks the route of the request's method among those of one
// path, and refuses query parameters the route does not take.
func dispatch(rs []route) handlerFunc {
	methods := make([]string, len(rs))
	for i, rt := range rs {
		methods[i] = rt.method
	}
	return func(w http.ResponseWriter, r *http.Request) error {
		i := slices.Index(methods, r.Method)
		if i < 0 {
			return &methodNotAllowed{method: r.Method, path: r.URL.Path, allowed: methods}
		}
		if err := checkQuery(r.URL.RawQuery, rs[i].query); err != nil {
			return err
		}
		return rs[i].h(w, r)
	}
}

// checkQuery refuses a query string that does not parse or that names a
// parameter not in takes.
func checkQuery(raw string, takes []string) error {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return api.Errorf(errdefs.ErrInvalidArgument, "bad query string: %v", err)
	}
	var unknown []string
	for k := range q {
		if !slices.Contains(takes, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	what := "no query parameters"
	if len(takes) > 0 {
		what = sentenceList(takes, "and")
	}
	return api.Errorf(errdefs.ErrInvalidArgument, "unknown query parameter %s: this endpoint takes %s", api.Quote(unknown[0]), what)
}

// methodNotAllowed is a known path asked with a method it does not serve:
// the caller's mistake (invalid_argument), answered 405 with Allow.
type methodNotAllowed struct {
	method, path string
	allowed      []string
}

func (e *methodNotAllowed) Error() string {
	return fmt.Sprintf("%s is not allowed on %s: use %s", e.method, e.path, sentenceList(e.allowed, "or"))
}

func (e *methodNotAllowed) Is(target error) bool { return target == errdefs.ErrInvalidArgument }

// allow is the value of the Allow header.
func (e *methodNotAllowed) allow() string { return strings.Join(e.allowed, ", ") }

// sentenceList writes items as a sentence does: "a", "a or b", "a, b or c".
func sentenceList(items []string, conj string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " " + conj + " " + items[len(items)-1]
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) error {
	s.o.Metrics.ServeHTTP(w, r)
	return nil
}
