// Package mcpgateway lets code in a sandbox call the host's MCP servers,
// and nothing else of the host: each session granted servers gets a Unix
// socket of its own, bound into its sandbox, on which the gateway takes
// one request a line (api.MCPRequest), checks it against the session's
// grant and the server's tool list, and makes the call as an MCP client
// of the server (a process per session and server, or an HTTP endpoint),
// under the server's timeout and answer size cap. Every call is told to
// the daemon (its event, log line and metrics).
package mcpgateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/daemon/config"
)

// Bounds of what a sandbox can make the gateway hold.
const (
	// maxRequest bounds a request line (a tool's arguments).
	maxRequest = 4 << 20
	// maxConns bounds a session's connections at once; more are answered
	// with an error and closed.
	maxConns = 16
)

// Call is one call through the gateway, for the daemon's event, log line
// and metrics.
type Call struct {
	Session, Server, Tool string
	Duration              time.Duration
	Outcome               string // an api.MCPOutcome value
	Err                   string
}

// Gateway serves the sessions' sockets.
type Gateway struct {
	cfg config.MCP
	// root holds the sessions' folders (folders.go).
	root string
	log  *slog.Logger
	tell func(Call)

	mu       sync.Mutex
	sessions map[string]*gate
}

// New is a gateway of the configured servers, its sessions' folders under
// root; tell hears of every call.
func New(cfg config.MCP, root string, log *slog.Logger, tell func(Call)) *Gateway {
	return &Gateway{cfg: cfg, root: root, log: log, tell: tell, sessions: map[string]*gate{}}
}

// Config is the gateway's configuration.
func (g *Gateway) Config() config.MCP { return g.cfg }

// Info lists the configured servers and the tools they allow.
func (g *Gateway) Info() []api.MCPServerInfo {
	out := []api.MCPServerInfo{}
	for _, n := range g.cfg.Names() {
		info := api.MCPServerInfo{Name: n, Tools: []api.MCPToolInfo{}}
		for _, t := range g.cfg.Servers[n].Tools {
			info.Tools = append(info.Tools, api.MCPToolInfo{Name: t})
		}
		out = append(out, info)
	}
	return out
}

// Owner is who the sandbox's code runs as on the host: the owner of the
// gateway's folder, which no one else may enter.
type Owner struct{ UID, GID int }

// Open starts serving session id's socket in dir (made if need be, with
// the helper module), for the servers granted to it. It does nothing if
// the session's socket is served already.
func (g *Gateway) Open(id string, servers []string, dir string, owner Owner) error {
	if err := g.cfg.Check(servers); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.sessions[id]; ok {
		return nil
	}
	if err := prepareDir(dir, owner); err != nil {
		return fmt.Errorf("MCP gateway folder: %w", err)
	}
	sock := filepath.Join(dir, api.MCPGatewaySocket)
	_ = os.Remove(sock) // a previous daemon's
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return fmt.Errorf("MCP gateway socket: %w", err)
	}
	// The folder keeps everyone but the sandbox's user out.
	if err := os.Chmod(sock, 0o666); err != nil {
		l.Close()
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	gt := &gate{g: g, id: id, l: l, ctx: ctx, cancel: cancel, ups: map[string]*upstream{},
		conns: map[net.Conn]struct{}{}, log: g.log.With("session", id)}
	for _, n := range servers {
		gt.ups[n] = &upstream{name: n, srv: g.cfg.Servers[n], session: id, log: g.log}
	}
	g.sessions[id] = gt
	gt.wg.Add(1)
	go gt.serve()
	return nil
}

// prepareDir makes the session's folder: its owner the sandbox's user,
// who may only read it, and the helper module in it. The helper is
// written before the folder is made read-only and handed over, so the
// sandbox's user never holds a folder it may write (a root daemon writes
// into it, and binds its socket there, whatever its mode).
func prepareDir(dir string, owner Owner) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o711); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	// Written at each open: a newer daemon's helper replaces an older's.
	helper := filepath.Join(dir, api.MCPHelperModule+".py")
	tmp := helper + ".tmp"
	if err := os.WriteFile(tmp, helperSource, 0o444); err != nil {
		return err
	}
	if err := os.Rename(tmp, helper); err != nil {
		return err
	}
	if err := os.Chmod(dir, readOnlyDirMode()); err != nil {
		return err
	}
	return os.Chown(dir, owner.UID, owner.GID)
}

// readOnlyDirMode is the mode of a session's folder: read-only to its
// owner, the sandbox's user. A daemon that is not root (the unit tests')
// has no other user to keep out, and no power to write past a mode: its
// folders stay its own to write.
func readOnlyDirMode() os.FileMode {
	if os.Geteuid() != 0 {
		return 0o700
	}
	return 0o500
}

// Close stops serving the session's socket and ends its servers'
// connections (their processes): a session whose sandbox stopped.
func (g *Gateway) Close(id string) {
	g.mu.Lock()
	gt := g.sessions[id]
	delete(g.sessions, id)
	g.mu.Unlock()
	if gt != nil {
		gt.close()
	}
}

// Remove closes the session's gateway and removes its folder: a session
// deleted.
func (g *Gateway) Remove(id, dir string) error {
	g.Close(id)
	return os.RemoveAll(dir)
}

// Shutdown closes every session's gateway, keeping their folders: their
// sandboxes run on, and the next daemon serves them again.
func (g *Gateway) Shutdown() {
	g.mu.Lock()
	all := g.sessions
	g.sessions = map[string]*gate{}
	g.mu.Unlock()
	var wg sync.WaitGroup
	for _, gt := range all {
		wg.Go(gt.close)
	}
	wg.Wait()
}

// gate is one session's socket and its connections to its servers.
type gate struct {
	g      *Gateway
	id     string
	l      *net.UnixListener
	ctx    context.Context
	cancel context.CancelFunc
	ups    map[string]*upstream // the granted servers
	log    *slog.Logger

	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func (gt *gate) close() {
	gt.cancel()
	gt.l.Close()
	gt.mu.Lock()
	for c := range gt.conns {
		c.Close()
	}
	gt.mu.Unlock()
	for _, u := range gt.ups {
		u.close()
	}
	gt.wg.Wait()
}

func (gt *gate) serve() {
	defer gt.wg.Done()
	for {
		c, err := gt.l.Accept()
		if err != nil {
			if gt.ctx.Err() == nil {
				gt.log.Warn("MCP gateway stopped accepting", "err", err)
			}
			return
		}
		gt.mu.Lock()
		full := len(gt.conns) >= maxConns
		if !full {
			gt.conns[c] = struct{}{}
		}
		gt.mu.Unlock()
		if full {
			_ = writeAnswer(c, refusal(api.MCPOutcomeFailed, fmt.Sprintf("more than %d connections to the MCP gateway at once", maxConns)))
			c.Close()
			continue
		}
		gt.wg.Add(1)
		go func() {
			defer gt.wg.Done()
			gt.handle(c)
			gt.mu.Lock()
			delete(gt.conns, c)
			gt.mu.Unlock()
			c.Close()
		}()
	}
}

// handle answers a connection's requests, one after another, until it
// closes or sends a line no request could be.
func (gt *gate) handle(c net.Conn) {
	r := bufio.NewReaderSize(c, 64<<10)
	for {
		line, err := readLine(r, maxRequest)
		if err != nil {
			if errors.Is(err, errLineTooLong) {
				_ = writeAnswer(c, refusal(api.MCPOutcomeInvalid, fmt.Sprintf("a request is at most %d bytes", maxRequest)))
			}
			return
		}
		req, err := DecodeRequest(line)
		var ans api.MCPAnswer
		if err != nil {
			ans = refusal(api.MCPOutcomeInvalid, err.Error())
		} else if req.Op == api.MCPOpList {
			ans = gt.list()
		} else {
			ans = gt.call(req)
		}
		if err := writeAnswer(c, ans); err != nil {
			return
		}
	}
}

// call makes one tool call, and tells the daemon of it whatever became of
// it.
func (gt *gate) call(req *api.MCPRequest) api.MCPAnswer {
	start := time.Now()
	ans, outcome, why := gt.callOnce(req)
	gt.g.tell(Call{Session: gt.id, Server: req.Server, Tool: req.Tool, Duration: time.Since(start), Outcome: outcome, Err: why})
	return ans
}

func (gt *gate) callOnce(req *api.MCPRequest) (api.MCPAnswer, string, string) {
	fail := func(outcome, why string) (api.MCPAnswer, string, string) {
		return refusal(outcome, why), outcome, why
	}
	u, ok := gt.ups[req.Server]
	if !ok {
		return fail(api.MCPOutcomeRefused, fmt.Sprintf("MCP server %q is not granted to this session", req.Server))
	}
	if !u.srv.Allows(req.Tool) {
		return fail(api.MCPOutcomeRefused, fmt.Sprintf("tool %q of MCP server %q is not allowed (allowed: %v)", req.Tool, req.Server, u.srv.Tools))
	}
	timeout := u.srv.Timeout()
	if t := time.Duration(req.TimeoutS * float64(time.Second)); t > 0 && t < timeout {
		timeout = t
	}
	ctx, cancel := context.WithTimeout(gt.ctx, timeout)
	defer cancel()
	cs, err := u.client(ctx)
	if err != nil {
		return gt.failed(ctx, u, timeout, "start", err)
	}
	var args any
	if len(req.Arguments) > 0 {
		args = req.Arguments
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: req.Tool, Arguments: args})
	if err != nil {
		if ctx.Err() != nil || broken(err) {
			u.drop(cs) // hung or broken: the next call starts afresh
		}
		return gt.failed(ctx, u, timeout, "call", err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		return fail(api.MCPOutcomeFailed, "the server's answer: "+err.Error())
	}
	if max := u.srv.AnswerMax(); int64(len(b)) > max {
		return fail(api.MCPOutcomeTooLarge, fmt.Sprintf("the answer of tool %q is %d bytes, over MCP server %q's max_bytes (%d)", req.Tool, len(b), req.Server, max))
	}
	outcome := api.MCPOutcomeOK
	if res.IsError {
		outcome = api.MCPOutcomeToolError
	}
	return api.MCPAnswer{OK: true, Result: b}, outcome, ""
}

// failed is the answer to a call that could not be made or did not end.
func (gt *gate) failed(ctx context.Context, u *upstream, timeout time.Duration, step string, err error) (api.MCPAnswer, string, string) {
	outcome, why := api.MCPOutcomeFailed, fmt.Sprintf("MCP server %q: %s: %v", u.name, step, err)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		outcome, why = api.MCPOutcomeTimeout, fmt.Sprintf("MCP server %q did not answer within %s", u.name, timeout)
	case gt.ctx.Err() != nil:
		why = errClosed.Error()
	}
	return refusal(outcome, why), outcome, why
}

// list describes the granted servers and the tools the session may call
// on each, as the servers describe them.
func (gt *gate) list() api.MCPAnswer {
	ans := api.MCPAnswer{OK: true, Servers: []api.MCPServerInfo{}}
	for _, n := range gt.g.cfg.Names() {
		u, ok := gt.ups[n]
		if !ok {
			continue
		}
		info := api.MCPServerInfo{Name: n, Tools: []api.MCPToolInfo{}}
		if err := gt.listTools(u, &info); err != nil {
			info.Error = err.Error()
		}
		ans.Servers = append(ans.Servers, info)
	}
	return ans
}

func (gt *gate) listTools(u *upstream, info *api.MCPServerInfo) error {
	ctx, cancel := context.WithTimeout(gt.ctx, u.srv.Timeout())
	defer cancel()
	cs, err := u.client(ctx)
	if err != nil {
		return err
	}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			if ctx.Err() != nil || broken(err) {
				u.drop(cs)
			}
			return err
		}
		if !u.srv.Allows(t.Name) {
			continue
		}
		schema, _ := json.Marshal(t.InputSchema)
		info.Tools = append(info.Tools, api.MCPToolInfo{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	return nil
}

func refusal(code, msg string) api.MCPAnswer {
	return api.MCPAnswer{Error: &api.MCPGatewayError{Code: code, Message: msg}}
}

func writeAnswer(w io.Writer, ans api.MCPAnswer) error {
	b, err := json.Marshal(ans)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
