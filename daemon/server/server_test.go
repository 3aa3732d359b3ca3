package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
	"github.com/sandboxd/sandboxd/internal/identity"
)

// fakeBackend answers from memory and remembers who called.
type fakeBackend struct {
	caller identity.Caller
	// ports are the servers "in" session s1: port → loopback address.
	ports map[int]string

	// Events sends events (after gate closes, if set), then fails with
	// eventsErr if set, else waits for ctx or f.Until.
	mu        sync.Mutex
	filter    api.EventFilter
	events    []api.SessionEvent
	gate      chan struct{}
	eventsErr error
	// stdin is what WriteStdin was sent (processes_test.go).
	stdin    []byte
	stdinEOF bool
	// meta is what PutFileMeta was given (files_ops_test.go).
	meta map[string]string
}

func (f *fakeBackend) Health(context.Context) (*api.Health, error) {
	return &api.Health{Status: api.HealthOK}, nil
}
func (f *fakeBackend) Info(ctx context.Context) (*api.Info, error) {
	f.caller = identity.From(ctx)
	return &api.Info{APIVersion: api.Version}, nil
}
func (f *fakeBackend) Node(ctx context.Context) (*api.Node, error) {
	f.caller = identity.From(ctx)
	return &api.Node{NodeID: "n1", State: api.NodeReady, Labels: map[string]string{"zone": "a"}, Runtimes: []string{api.RuntimeRunc}}, nil
}
func (f *fakeBackend) Drain(ctx context.Context, on bool) (*api.Node, error) {
	n, _ := f.Node(ctx)
	if on {
		n.State = api.NodeDraining
	}
	return n, nil
}
func (f *fakeBackend) CreateSessionOnce(_ context.Context, r *api.CreateSessionRequest, key string) (*api.Session, bool, error) {
	if r.MemoryMB != nil && *r.MemoryMB < 0 {
		return nil, false, errdefs.ErrInvalidArgument.WithMessage("memory_mb is negative")
	}
	return &api.Session{ID: "s1", Labels: r.Labels}, key != "seen", nil
}
func (f *fakeBackend) ListSessions(_ context.Context, l map[string]string) ([]api.Session, error) {
	return []api.Session{{ID: "s1", Labels: l}}, nil
}
func (f *fakeBackend) GetSession(_ context.Context, id string) (*api.Session, error) {
	if id == "full" {
		return nil, api.WithRetryAfter(errdefs.ErrResourceExhausted.WithMessage("too many sessions"), 7*time.Second)
	}
	if id != "s1" {
		return nil, errdefs.ErrNotFound.WithMessage("no such session: " + id)
	}
	return &api.Session{ID: id}, nil
}
func (f *fakeBackend) DeleteSession(context.Context, string) error { return nil }
func (f *fakeBackend) StopSession(_ context.Context, id string) (*api.Session, error) {
	return &api.Session{ID: id, Status: api.StatusStopped}, nil
}
func (f *fakeBackend) StartSession(_ context.Context, id string) (*api.Session, error) {
	return &api.Session{ID: id, Status: api.StatusRunning}, nil
}
func (f *fakeBackend) RestartSession(ctx context.Context, id string) (*api.Session, error) {
	return f.StartSession(ctx, id)
}
func (f *fakeBackend) PauseSession(_ context.Context, id string) (*api.Session, error) {
	return &api.Session{ID: id, Status: api.StatusPaused}, nil
}
func (f *fakeBackend) ResumeSession(ctx context.Context, id string) (*api.Session, error) {
	return f.StartSession(ctx, id)
}
func (f *fakeBackend) HibernateSession(_ context.Context, id string) (*api.Session, error) {
	return &api.Session{ID: id, Status: api.StatusHibernated}, nil
}
func (f *fakeBackend) SetNetwork(_ context.Context, id string, r *api.NetworkRequest) (*api.Session, error) {
	return &api.Session{ID: id, Network: r.Network, Allow: r.Allow}, nil
}
func (f *fakeBackend) UpdateSession(_ context.Context, id string, r *api.UpdateSessionRequest) (*api.Session, error) {
	if id != "s1" {
		return nil, errdefs.ErrNotFound.WithMessage("no such session: " + id)
	}
	return &api.Session{ID: id}, nil
}
func (f *fakeBackend) PortDialer(_ context.Context, id string, port int) (func(context.Context) (net.Conn, error), error) {
	if id != "s1" {
		return nil, errdefs.ErrNotFound.WithMessage("no such session: " + id)
	}
	addr, ok := f.ports[port]
	return func(ctx context.Context) (net.Conn, error) {
		if !ok {
			return nil, api.ErrBadGateway.WithMessage("nothing listens")
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}, nil
}
func (f *fakeBackend) InstallPackages(ctx context.Context, id string, r *api.PackagesRequest, on func(api.Event)) (*api.Execution, error) {
	return &api.Execution{Status: api.StatusOK}, nil
}
func (f *fakeBackend) Exec(_ context.Context, id string, r *api.ExecRequest, on func(api.Event)) (*api.Execution, error) {
	if r.Code == "panic" {
		panic("boom")
	}
	if on != nil {
		on(api.Event{Type: api.EventStdout, Data: "out"})
	}
	res := "2"
	return &api.Execution{SessionID: id, Status: api.StatusOK, Stdout: "out", Result: &res}, nil
}
func (f *fakeBackend) Interrupt(_ context.Context, id string) (bool, error) {
	if id != "s1" {
		return false, errdefs.ErrNotFound.WithMessage("no such session: " + id)
	}
	return true, nil
}
func (f *fakeBackend) CreateContext(_ context.Context, id string, req *api.CreateContextRequest) (*api.CodeContext, error) {
	return &api.CodeContext{ID: "c1", Language: "python", Cwd: req.Cwd}, nil
}
func (f *fakeBackend) Contexts(context.Context, string) ([]api.CodeContext, error) {
	return []api.CodeContext{{ID: api.ContextDefault, Language: "python", Cwd: "/workspace"}}, nil
}
func (f *fakeBackend) DeleteContext(context.Context, string, string) error { return nil }
func (f *fakeBackend) RestartContext(_ context.Context, _, cid string) (*api.CodeContext, error) {
	return &api.CodeContext{ID: cid, Language: "python"}, nil
}
func (f *fakeBackend) CreateVolume(_ context.Context, req *api.CreateVolumeRequest) (*api.Volume, error) {
	return &api.Volume{Name: req.Name, SizeMB: req.SizeMB, MountedBy: []string{}}, nil
}
func (f *fakeBackend) ListVolumes(context.Context) ([]api.Volume, error) {
	return []api.Volume{{Name: "data", SizeMB: 64, MountedBy: []string{}}}, nil
}
func (f *fakeBackend) GetVolume(_ context.Context, name string) (*api.Volume, error) {
	if name != "data" {
		return nil, errdefs.ErrNotFound.WithMessage("no such volume: " + name)
	}
	return &api.Volume{Name: name, SizeMB: 64, MountedBy: []string{"s1"}}, nil
}
func (f *fakeBackend) UpdateVolume(_ context.Context, name string, req *api.UpdateVolumeRequest) (*api.Volume, error) {
	v := &api.Volume{Name: name, SizeMB: 64, MountedBy: []string{}}
	if req.SharedWith != nil {
		v.SharedWith = *req.SharedWith
	}
	return v, nil
}
func (f *fakeBackend) DeleteVolume(_ context.Context, name string) error {
	if name == "data" {
		return errdefs.ErrConflict.WithMessage("volume data is mounted by sessions [s1]: delete them first")
	}
	return errdefs.ErrNotFound.WithMessage("no such volume: " + name)
}
func (f *fakeBackend) OpenVolumeFile(context.Context, string, string) (*os.File, *api.FileList, error) {
	return nil, &api.FileList{Entries: []api.FileInfo{}}, nil
}
func (f *fakeBackend) PutVolumeFile(_ context.Context, _, p string, body io.Reader) (*api.FileWritten, error) {
	n, err := io.Copy(io.Discard, body)
	return &api.FileWritten{Path: p, Size: n}, err
}
func (f *fakeBackend) DeleteVolumeFile(context.Context, string, string) error { return nil }
func (f *fakeBackend) CreateSnapshot(_ context.Context, id string, req *api.CreateSnapshotRequest) (*api.Snapshot, error) {
	return &api.Snapshot{ID: "snap1", SessionID: id, Name: req.Name}, nil
}
func (f *fakeBackend) ListSnapshots(context.Context) ([]api.Snapshot, error) {
	return []api.Snapshot{{ID: "snap1", SessionID: "s1"}}, nil
}
func (f *fakeBackend) GetSnapshot(_ context.Context, ref string) (*api.Snapshot, error) {
	if ref != "snap1" {
		return nil, api.Errorf(errdefs.ErrNotFound, "no such snapshot: %s", ref)
	}
	return &api.Snapshot{ID: ref, SessionID: "s1"}, nil
}
func (f *fakeBackend) DeleteSnapshot(context.Context, string) error { return nil }
func (f *fakeBackend) Undo(_ context.Context, _ string, req *api.UndoRequest) (*api.UndoResult, error) {
	return &api.UndoResult{Undone: max(req.Steps, 1)}, nil
}
func (f *fakeBackend) ExportSnapshot(_ context.Context, ref string) (func(io.Writer) error, error) {
	if ref != "snap1" {
		return nil, api.Errorf(errdefs.ErrNotFound, "no such snapshot: %s", ref)
	}
	return func(w io.Writer) error { _, err := io.WriteString(w, "tar"); return err }, nil
}
func (f *fakeBackend) ImportSnapshot(_ context.Context, name string, body io.Reader) (*api.Snapshot, error) {
	b, _ := io.ReadAll(body)
	return &api.Snapshot{ID: "snap2", Name: name, SizeMB: int64(len(b))}, nil
}
func (f *fakeBackend) CreateSessions(_ context.Context, req *api.CreateSessionRequest) ([]api.Session, error) {
	out := make([]api.Session, req.Count)
	for i := range out {
		out[i] = api.Session{ID: fmt.Sprintf("from-%s-%d", req.Snapshot, i)}
	}
	return out, nil
}
func (f *fakeBackend) Fork(_ context.Context, id string, req *api.ForkRequest) ([]api.Session, error) {
	out := make([]api.Session, max(req.Count, 1))
	for i := range out {
		out[i] = api.Session{ID: fmt.Sprintf("fork-%s-%d", id, i)}
	}
	return out, nil
}
func (f *fakeBackend) Executions(context.Context, string, int) ([]api.ExecutionSummary, error) {
	return []api.ExecutionSummary{}, nil
}

// Attach echoes the input back as stdout and exits 7 at its end; argv
// "nope" cannot start.
func (f *fakeBackend) Attach(_ context.Context, _ string, req *api.AttachRequest) (func(io.ReadWriteCloser), error) {
	if req.Argv[0] == "nope" {
		return nil, errdefs.ErrInvalidArgument.WithMessage("cannot run nope")
	}
	return func(conn io.ReadWriteCloser) {
		if conn == nil {
			return
		}
		defer conn.Close()
		for {
			typ, p, err := api.ReadFrame(conn, nil)
			if err != nil {
				println("fake attach:", err.Error())
				return
			}
			switch typ {
			case api.FrameStdin:
				_ = api.WriteFrame(conn, api.FrameStdout, p)
			case api.FrameCloseStdin:
				_ = api.WriteFrame(conn, api.FrameExit, api.ExitPayload(7))
				return
			}
		}
	}, nil
}

func (f *fakeBackend) PutTar(_ context.Context, _, p string, body io.Reader) (*api.FileWritten, error) {
	n, _ := io.Copy(io.Discard, body)
	return &api.FileWritten{Path: p, Size: n, Files: 1}, nil
}
func (f *fakeBackend) GetTar(_ context.Context, _, p string, w io.Writer) error {
	if p == "missing" {
		return errdefs.ErrNotFound.WithMessage("no such folder")
	}
	_, err := w.Write([]byte("tar"))
	return err
}

func (f *fakeBackend) StartProcess(_ context.Context, _ string, req *api.ProcessRequest) (*api.Process, error) {
	return &api.Process{PID: 7, Command: strings.Join(req.Argv, " "), Detached: true}, nil
}
func (f *fakeBackend) Processes(context.Context, string) ([]api.Process, error) {
	return []api.Process{{PID: 1, Command: "agent"}}, nil
}
func (f *fakeBackend) SignalProcess(_ context.Context, _ string, pid int, _ string) error {
	if pid != 7 {
		return errdefs.ErrNotFound.WithMessage("no process")
	}
	return nil
}
func (f *fakeBackend) ProcessLogs(_ context.Context, _ string, _ int, offset int64) (io.ReadCloser, bool, *int, error) {
	return io.NopCloser(strings.NewReader("log"[offset:])), true, nil, nil
}

func (f *fakeBackend) StartExec(context.Context, string, *api.ExecRequest) (string, error) {
	return "e1", nil
}
func (f *fakeBackend) Execution(_ context.Context, _, eid string) (*api.Execution, error) {
	return &api.Execution{ID: eid, Status: api.StatusRunning}, nil
}
func (f *fakeBackend) PutFile(_ context.Context, _, p string, body io.Reader) (*api.FileWritten, error) {
	n, _ := io.Copy(io.Discard, body)
	return &api.FileWritten{Path: p, Size: n}, nil
}
func (f *fakeBackend) OpenFile(context.Context, string, string) (*os.File, *api.FileList, error) {
	return nil, &api.FileList{Entries: []api.FileInfo{{Name: "a"}}}, nil
}
func (f *fakeBackend) DeleteFile(context.Context, string, string) error { return nil }
func (f *fakeBackend) Stats(context.Context, string) (*api.Stats, error) {
	return &api.Stats{Status: api.StatusRunning}, nil
}
func (f *fakeBackend) Run(ctx context.Context, r *api.RunRequest, on func(api.Event)) (*api.Execution, error) {
	return f.Exec(ctx, "run", &api.ExecRequest{Code: r.Code}, on)
}

func (f *fakeBackend) Templates(context.Context) ([]api.Template, error) {
	return []api.Template{{Name: "python", Rootfs: api.RootfsHost}}, nil
}

func (f *fakeBackend) Template(_ context.Context, name string) (*api.Template, error) {
	if name == "boom" {
		return nil, errors.New("a bug")
	}
	return nil, api.Errorf(errdefs.ErrNotFound, "no such template: %s", name)
}

func (f *fakeBackend) AddTemplate(_ context.Context, t *api.Template) (*api.Template, error) {
	return t, nil
}

func (f *fakeBackend) DeleteTemplate(context.Context, string) error { return nil }

func (f *fakeBackend) ImportRootfs(_ context.Context, name string, body io.Reader) (*api.RootfsImported, error) {
	n, err := io.Copy(io.Discard, body)
	return &api.RootfsImported{Name: name, Bytes: n}, err
}

func (f *fakeBackend) Events(ctx context.Context, filter api.EventFilter, send func(*api.SessionEvent) error) error {
	f.mu.Lock()
	f.filter = filter
	events, gate, fail := f.events, f.gate, f.eventsErr
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil
		}
	}
	for i := range events {
		if err := send(&events[i]); err != nil {
			return err
		}
	}
	if fail != nil {
		return fail
	}
	var until <-chan time.Time
	if !filter.Until.IsZero() {
		until = time.After(time.Until(filter.Until))
	}
	select {
	case <-ctx.Done():
	case <-until:
	}
	return nil
}

// lastFilter is the filter of the last Events call.
func (f *fakeBackend) lastFilter() api.EventFilter {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.filter
}

var _ Backend = (*fakeBackend)(nil)

func serve(t *testing.T) (*fakeBackend, *client.Client, string) {
	t.Helper()
	b := &fakeBackend{}
	_, c, sock := serveBackend(t, b, Options{})
	return b, c, sock
}

// serveBackend serves b on a fresh socket; zero size limits take the
// tests' small ones.
func serveBackend(t *testing.T, b Backend, o Options) (*Server, *client.Client, string) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	l, err := Listen(sock, "")
	if err != nil {
		t.Fatal(err)
	}
	if o.MaxRequestBytes == 0 {
		o.MaxRequestBytes = 1024
	}
	if o.MaxUploadBytes == 0 {
		o.MaxUploadBytes = 100
	}
	s := New(BackendsOf(b), o, slog.New(slog.NewTextHandler(io.Discard, nil)))
	go s.Serve(l)
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return s, client.New(sock), sock
}

// newTestServer is a server for httptest requests, with its log in buf.
func newTestServer(b Backend, o Options, buf io.Writer) *Server {
	if o.MaxRequestBytes == 0 {
		o.MaxRequestBytes = 1024
	}
	return New(BackendsOf(b), o, slog.New(slog.NewJSONHandler(buf, nil)))
}

// testCaller is who httptest requests come from.
var testCaller = identity.Peer(1000, 1000, 1)

// do sends an httptest request as if testCaller sent it over the socket.
func do(s *Server, method, target, body string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	r = r.WithContext(context.WithValue(r.Context(), credKey{}, testCaller))
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, r)
	return w
}

// errorBody decodes an error answer; the test fails if it is not one.
func errorBody(t *testing.T, w *httptest.ResponseRecorder) api.ErrorDetail {
	t.Helper()
	var eb api.ErrorBody
	if err := json.Unmarshal(w.Body.Bytes(), &eb); err != nil || eb.Error.Code == "" {
		t.Fatalf("not an error body (%v): %s", err, w.Body)
	}
	return eb.Error
}

func TestServerWithClient(t *testing.T) {
	b, c, sock := serve(t)
	ctx := context.Background()
	if _, err := c.Info(ctx); err != nil {
		t.Fatal(err)
	}
	if b.caller.UID != uint32(os.Getuid()) || b.caller.PID != int32(os.Getpid()) {
		t.Fatalf("caller from SO_PEERCRED: %+v", b.caller)
	}
	b.caller = identity.Caller{}
	if n, err := c.Node(ctx); err != nil || n.NodeID != "n1" || n.Labels["zone"] != "a" || len(n.Runtimes) != 1 || b.caller.UID != uint32(os.Getuid()) {
		t.Fatalf("node through the client: %+v %v (caller %+v)", n, err, b.caller)
	}
	if _, err := c.GetSession(ctx, "nope"); !errdefs.IsNotFound(err) || err.Error() != "no such session: nope" {
		t.Fatalf("not found through the client: %v", err)
	}
	neg := int64(-1)
	if _, err := c.CreateSession(ctx, &api.CreateSessionRequest{MemoryMB: &neg}); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("invalid through the client: %v", err)
	}
	var events []api.Event
	e, err := c.Exec(ctx, "s1", &api.ExecRequest{Language: "python", Code: "1+1"}, func(ev api.Event) { events = append(events, ev) })
	if err != nil || *e.Result != "2" || len(events) != 1 || events[0].Data != "out" {
		t.Fatalf("stream: %+v %+v %v", e, events, err)
	}
	if s, err := c.PauseSession(ctx, "s1"); err != nil || s.Status != api.StatusPaused {
		t.Fatalf("pause: %+v %v", s, err)
	}
	if s, err := c.ResumeSession(ctx, "s1"); err != nil || s.Status != api.StatusRunning {
		t.Fatalf("resume: %+v %v", s, err)
	}
	if s, err := c.HibernateSession(ctx, "s1"); err != nil || s.Status != api.StatusHibernated {
		t.Fatalf("hibernate: %+v %v", s, err)
	}
	if ok, err := c.Interrupt(ctx, "s1"); !ok || err != nil {
		t.Fatalf("interrupt: %v %v", ok, err)
	}
	if _, err := c.Interrupt(ctx, "nope"); !errdefs.IsNotFound(err) {
		t.Fatalf("interrupt of no session: %v", err)
	}
	if _, err := c.Exec(ctx, "s1", &api.ExecRequest{Code: "panic"}, nil); !errdefs.IsInternal(err) {
		t.Fatalf("a panicking handler answers 500 and the server lives: %v", err)
	}
	if _, err := c.Info(ctx); err != nil {
		t.Fatal("server down after a panic")
	}
	if _, err := c.PutFile(ctx, "s1", "f", strings.NewReader(strings.Repeat("x", 101))); !api.IsPayloadTooLarge(err) {
		t.Fatalf("upload over the limit: %v", err)
	}
	if _, err := c.CreateSession(ctx, &api.CreateSessionRequest{Labels: map[string]string{"k": strings.Repeat("v", 2000)}}); !api.IsPayloadTooLarge(err) {
		t.Fatalf("body over the limit: %v", err)
	}
	// A second Listen on a live socket must fail and leave it serving.
	if _, err := Listen(sock, ""); err == nil || !strings.Contains(err.Error(), "already serving") {
		t.Fatalf("second listen: %v", err)
	}
	if _, err := c.Info(ctx); err != nil {
		t.Fatal("the first server lost its socket")
	}
	fi, _ := os.Stat(sock)
	if fi.Mode().Perm() != 0o660 {
		t.Fatalf("socket mode %v", fi.Mode().Perm())
	}
}

func TestBrowserAndUnknownRoutes(t *testing.T) {
	_, _, sock := serve(t)
	hc := unixHTTP(sock)
	req, _ := http.NewRequest("GET", "http://x/v1/info", nil)
	req.Header.Set("Origin", "http://evil.example")
	resp, err := hc.Do(req)
	if err != nil || resp.StatusCode != 400 {
		t.Fatalf("browser request: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = hc.Get("http://x/v9/nothing")
	if err != nil || resp.StatusCode != 404 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("unknown route: %v %v", resp, err)
	}
	if resp.Header.Get(api.VersionHeader) == "" {
		t.Fatal("version header missing")
	}
	resp.Body.Close()
}

func TestStaleSocketIsReplaced(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	l, err := Listen(sock, "")
	if err != nil {
		t.Fatal(err)
	}
	// Closing a unix listener removes its file; recreate a stale one.
	l.(interface{ SetUnlinkOnClose(bool) }).SetUnlinkOnClose(false)
	l.Close()
	l, err = Listen(sock, "")
	if err != nil {
		t.Fatalf("a stale socket must be replaced: %v", err)
	}
	l.Close()
	os.WriteFile(sock, []byte("x"), 0o600)
	if _, err := Listen(sock, ""); err == nil {
		t.Fatal("a regular file at the socket path must not be removed")
	}
	if _, err := Listen("/tmp/"+strings.Repeat("x", 120), ""); err == nil {
		t.Fatal("too long a path")
	}
}

// TestCreateStatus: a create answers 201, one the backend answers with an
// earlier create's session (an Idempotency-Key seen before) 200; wait
// false answers 202 with the id, and an execution is found by its id.
func TestCreateStatus(t *testing.T) {
	s := newTestServer(&fakeBackend{}, Options{}, io.Discard)
	for _, tt := range []struct {
		key  string
		want int
	}{{"", http.StatusCreated}, {"fresh", http.StatusCreated}, {"seen", http.StatusOK}} {
		var h []string
		if tt.key != "" {
			h = []string{api.HeaderIdempotencyKey, tt.key}
		}
		if w := do(s, "POST", "/v1/sessions", "{}", h...); w.Code != tt.want {
			t.Errorf("key %q: %d, want %d", tt.key, w.Code, tt.want)
		}
	}
	if w := do(s, "POST", "/v1/sessions/s1/exec", `{"language":"python","code":"1","wait":false}`); w.Code != http.StatusAccepted || strings.TrimSpace(w.Body.String()) != `{"id":"e1"}` {
		t.Errorf("wait false: %d %s", w.Code, w.Body)
	}
	if w := do(s, "GET", "/v1/sessions/s1/executions/e9", ""); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"id":"e9"`) {
		t.Errorf("execution: %d %s", w.Code, w.Body)
	}
}

// TestAttachUpgrade: an attach is refused as an ordinary answer, or
// upgraded to frames over the same connection; a request without the
// upgrade headers is refused.
func TestAttachUpgrade(t *testing.T) {
	_, c, _ := serve(t)
	ctx := context.Background()
	if _, err := c.Attach(ctx, "s1", &api.AttachRequest{Argv: []string{"nope"}}); !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "cannot run nope") {
		t.Fatalf("refused: %v", err)
	}
	at, err := c.Attach(ctx, "s1", &api.AttachRequest{Argv: []string{"cat"}, TTY: true})
	if err != nil {
		t.Fatal(err)
	}
	defer at.Close()
	if _, err := at.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if err := at.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code, err := at.Wait(&out, io.Discard); code != 7 || err != nil || out.String() != "ping" {
		t.Fatalf("Wait = %d, %v; out %q", code, err, out.String())
	}
	s := newTestServer(&fakeBackend{}, Options{}, io.Discard)
	if w := do(s, "POST", "/v1/sessions/s1/attach", `{"argv":["cat"]}`); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "Upgrade") {
		t.Fatalf("without the upgrade: %d %s", w.Code, w.Body)
	}
}
