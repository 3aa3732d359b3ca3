package e2b

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// The ports E2B's SDKs name in E2b-Sandbox-Port: envd's (commands, files,
// the sandbox's health) and the code interpreter's.
const (
	portEnvd        = 49983
	portInterpreter = 49999
)

// serveSandbox serves a request for sandbox id's envd or code
// interpreter. The request carries the sandbox's access token, not a key:
// the token proves that the gateway gave the sandbox to a key's holder. A
// sandbox that is gone, stopped or paused answers 502, as E2B's proxy
// does: the SDKs report it killed (or paused) from that.
func (g *Gateway) serveSandbox(w http.ResponseWriter, r *http.Request, id string) {
	port, err := strconv.Atoi(r.Header.Get("E2b-Sandbox-Port"))
	if err != nil || (port != portEnvd && port != portInterpreter) {
		writeError(w, g.o.Log, errorf(http.StatusBadGateway, "sandbox %s: port %s is not served (envd %d, code interpreter %d)", id, api.Quote(r.Header.Get("E2b-Sandbox-Port")), portEnvd, portInterpreter))
		return
	}
	if err := g.authorize(r, id, port); err != nil {
		writeError(w, g.o.Log, err)
		return
	}
	s, err := g.o.Daemon.GetSession(r.Context(), id)
	if err == nil && s.Labels[labelGateway] != g.o.ID.ID {
		err = errdefs.ErrNotFound
	}
	switch {
	case errdefs.IsNotFound(err):
		writeError(w, g.o.Log, errorf(http.StatusBadGateway, "sandbox %s was not found: it was killed or its timeout passed", api.Quote(id)))
		return
	case err != nil:
		writeError(w, g.o.Log, err)
		return
	case paused(s.Status):
		writeError(w, g.o.Log, errorf(http.StatusBadGateway, "sandbox %s is paused: connect to it to resume it", id))
		return
	case s.Status != api.StatusRunning:
		g.discard(r.Context(), id)
		writeError(w, g.o.Log, errorf(http.StatusBadGateway, "sandbox %s was not found: it was killed or its timeout passed", id))
		return
	}
	h := g.sandboxRoute(port, r.Method, r.URL.Path)
	if h == nil {
		writeError(w, g.o.Log, errorf(http.StatusNotImplemented, "%s %s on port %d is not served by sandboxd's E2B gateway (docs/e2b.md lists what is)", r.Method, r.URL.Path, port))
		return
	}
	if err := h(w, r, s); err != nil {
		writeError(w, g.o.Log, err)
	}
}

// authorize checks that r may reach sandbox id: it carries the sandbox's
// access token, or is a health check (envd's needs none either; a wrong
// token on it still learns nothing: every sandbox is "unknown" to it
// alike), or is a GET or POST /files with no token and the sandbox's
// signature (signature.go), as envd allows.
func (g *Gateway) authorize(r *http.Request, id string, port int) error {
	token := r.Header.Get("X-Access-Token")
	switch {
	case g.o.ID.checkToken(id, token), r.URL.Path == "/health":
		return nil
	case port == portInterpreter && g.o.ID.checkTrafficToken(id, r.Header.Get("E2B-Traffic-Access-Token")):
		// The code interpreter SDK's contexts calls send this token alone.
		return nil
	case token == "" && isSignable(port, r):
		return g.o.ID.checkSignature(id, r, g.o.Now())
	}
	return errorf(http.StatusUnauthorized, "the sandbox's access token is missing or wrong")
}

// sandboxHandler serves one request for a running sandbox.
type sandboxHandler func(w http.ResponseWriter, r *http.Request, s *api.Session) error

// sandboxRoute is the handler of a sandbox request, nil if none.
func (g *Gateway) sandboxRoute(port int, method, path string) sandboxHandler {
	type key struct {
		port         int
		method, path string
	}
	if port == portEnvd && (strings.HasPrefix(path, "/filesystem.Filesystem/") || strings.HasPrefix(path, "/process.Process/")) {
		return g.rpcHandler
	}
	switch (key{port, method, path}) {
	case key{portEnvd, "GET", "/health"}, key{portInterpreter, "GET", "/health"}:
		return func(w http.ResponseWriter, _ *http.Request, _ *api.Session) error {
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
	case key{portEnvd, "GET", "/files"}:
		return g.readFile
	case key{portEnvd, "POST", "/files"}:
		return g.writeFiles
	case key{portInterpreter, "POST", "/execute"}:
		return g.execute
	case key{portInterpreter, "GET", "/contexts"}:
		return g.contexts
	case key{portInterpreter, "POST", "/contexts"}:
		return g.createContext
	}
	if port == portInterpreter {
		return g.contextRoute(method, path)
	}
	return nil
}
