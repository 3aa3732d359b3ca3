package e2b

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/e2b/keys"
)

// EnvdVersion is the envd version the gateway says its sandboxes run: the
// SDKs choose what they send by it (a default user from 0.4.0, octet-stream
// uploads from 0.5.7, file metadata from 0.6.2, a watch's includeEntry
// from 0.6.3). The JS SDK 2.51's next gate, 0.6.4, is a watch's
// allowNetworkMounts, which this gateway does not read.
const EnvdVersion = "0.6.3"

// Options are a gateway's.
type Options struct {
	Daemon Daemon
	Keys   *keys.Store
	ID     Identity
	// Listen is the address the gateway listens on: a request whose Host
	// names another place is refused (DNS rebinding).
	Listen string
	// Hosts are more names a request's Host may give (a proxy's name).
	Hosts []string
	// Templates map E2B template ids to sandboxd templates ("" the
	// daemon's default); an id not in it names a sandboxd template.
	Templates map[string]string
	// HomeTemplates are the sandboxd templates (refs) whose user is E2B's
	// (User, at /home/user): commands of their sandboxes start in
	// /home/user itself, not in the /workspace it shows.
	HomeTemplates []string
	// Network is the network of a sandbox whose create does not say
	// (allow_internet_access absent): "none" unless the operator opens it.
	Network string
	// MaxExecS is the longest execution the daemon allows (its
	// [max] timeout_s, GET /v1/info): code runs until its sandbox ends, at
	// most that long.
	MaxExecS int
	// ClientID is what sandboxes say they run on (E2B's clientID).
	ClientID string
	Log      *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Gateway serves E2B's API for one sandboxd.
type Gateway struct {
	o       Options
	control *http.ServeMux
	// rpc serves envd's Connect services.
	rpc *http.ServeMux
	// allowed are the Host values a request may carry.
	allowed map[string]bool
	port    string
	// maxExecS bounds an execution (Options.MaxExecS).
	maxExecS int
}

// maxBody bounds a control-plane request body.
const maxBody = 1 << 20

// New is a gateway over o.
func New(o Options) (*Gateway, error) {
	if o.Daemon == nil || o.Keys == nil || o.ID.ID == "" {
		return nil, errors.New("e2b gateway: a daemon, keys and an identity are needed")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Network == "" {
		o.Network = "none"
	}
	if o.ClientID == "" {
		o.ClientID = "sandboxd"
	}
	host, port, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, fmt.Errorf("e2b gateway: listen address %q: %w", o.Listen, err)
	}
	g := &Gateway{o: o, port: port, allowed: map[string]bool{}, maxExecS: o.MaxExecS}
	if g.maxExecS <= 0 {
		g.maxExecS = 3600
	}
	for _, h := range append([]string{host, "localhost"}, o.Hosts...) {
		g.allowed[strings.ToLower(h)] = true
	}
	g.control = g.controlRoutes()
	g.rpc = g.rpcRoutes()
	return g, nil
}

// ServeHTTP refuses what a browser or a rebound name could send, then
// dispatches: the control plane's paths, then a sandbox's by its headers.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := g.guard(r); err != nil {
		writeError(w, g.o.Log, err)
		return
	}
	if isControlPath(r.URL.Path) {
		g.control.ServeHTTP(w, r)
		return
	}
	if id := r.Header.Get("E2b-Sandbox-Id"); id != "" {
		g.serveSandbox(w, r, id)
		return
	}
	if isSignable(portEnvd, r) && r.URL.Query().Get("signature") != "" {
		// A signed URL (uploadUrl, downloadUrl) fetched as it is.
		id, err := g.signedSandbox(r)
		if err != nil {
			writeError(w, g.o.Log, err)
			return
		}
		r.Header.Set("E2b-Sandbox-Id", id)
		r.Header.Set("E2b-Sandbox-Port", strconv.Itoa(portEnvd))
		g.serveSandbox(w, r, id)
		return
	}
	writeError(w, g.o.Log, errorf(http.StatusNotFound, "no such path %s: sandbox requests carry the E2b-Sandbox-Id header (set E2B_SANDBOX_URL to this gateway)", r.URL.Path))
}

// guard refuses a request with an Origin (a web page's script: the
// gateway serves programs, not browsers) and one whose Host is not the
// gateway (DNS rebinding: a name that an attacker's DNS points here).
// An IP literal with the gateway's port is fine: no name was rebound.
func (g *Gateway) guard(r *http.Request) error {
	if r.Header.Get("Origin") != "" {
		return errorf(http.StatusForbidden, "requests from web pages (with an Origin header) are refused")
	}
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil {
		host, port = r.Host, ""
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if port != "" && port != g.port {
		return errorf(http.StatusForbidden, "requests for host %q are refused: this gateway is %s", r.Host, g.o.Listen)
	}
	if g.allowed[host] || net.ParseIP(host) != nil {
		return nil
	}
	return errorf(http.StatusForbidden, "requests for host %q are refused: this gateway is %s (more names: --allow-host)", r.Host, g.o.Listen)
}

// controlPrefixes start the control plane's paths; envd's and the code
// interpreter's (/health, /files, /execute, …) are none of them.
var controlPrefixes = []string{"/sandboxes", "/v2/sandboxes", "/templates", "/v2/templates", "/v3/templates", "/snapshots", "/volumes", "/teams", "/secrets"}

func isControlPath(p string) bool {
	for _, pre := range controlPrefixes {
		if p == pre || strings.HasPrefix(p, pre+"/") {
			return true
		}
	}
	return false
}

// keyed is a control-plane handler, given the request's key.
type keyed func(w http.ResponseWriter, r *http.Request, k keys.Key) error

// route is one method on one path of the control plane.
type route struct {
	method, path string
	h            keyed
}

// serve checks the request's X-API-KEY and runs h.
func (g *Gateway) serve(h keyed) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		k, ok, err := g.o.Keys.Check(r.Header.Get("X-API-KEY"))
		if err == nil && !ok {
			err = errUnauthorized
		}
		if err == nil {
			err = h(w, r, k)
		}
		if err != nil {
			writeError(w, g.o.Log, err)
		}
	}
}

// register serves each path once, choosing the method inside: ServeMux's
// own 405 has no E2B body.
func (g *Gateway) register(mux *http.ServeMux, rs []route) {
	byPath := map[string]map[string]keyed{}
	var order []string
	for _, rt := range rs {
		if byPath[rt.path] == nil {
			byPath[rt.path] = map[string]keyed{}
			order = append(order, rt.path)
		}
		byPath[rt.path][rt.method] = rt.h
	}
	for _, p := range order {
		methods := byPath[p]
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			h, ok := methods[r.Method]
			if !ok {
				writeError(w, g.o.Log, errorf(http.StatusMethodNotAllowed, "%s is not served on %s", r.Method, r.URL.Path))
				return
			}
			g.serve(h)(w, r)
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, g.o.Log, errorf(http.StatusNotFound, "no such path %s", r.URL.Path))
	})
}

// decode reads a JSON body into v; an empty body leaves v as it is.
// Fields it does not know are let through: a newer SDK may send more.
func decode(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return errdefs.ErrInvalidArgument.WithMessage("read the body: " + err.Error())
	}
	if len(b) > maxBody {
		return errorf(http.StatusRequestEntityTooLarge, "the body is over %d bytes", maxBody)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return errdefs.ErrInvalidArgument.WithMessage("the body is not the JSON this call takes: " + err.Error())
	}
	return nil
}

// queryInt is a query parameter as a non-negative integer (def when absent).
func queryInt(r *http.Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("%s must be a non-negative integer", name))
	}
	return n, nil
}
