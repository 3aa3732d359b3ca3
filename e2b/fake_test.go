package e2b

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// fakeDaemon is sandboxd as the gateway sees it, in memory.
type fakeDaemon struct {
	mu       sync.Mutex
	n        int
	now      func() time.Time
	sessions map[string]*api.Session
	created  []api.CreateSessionRequest
	deleted  []string
	execs    []api.ExecRequest
	files    map[string][]byte
	meta     map[string]map[string]string // a file's, by id:path
	dirs     map[string]bool
	events   []api.FileEvent
	procs    map[int]*fakeProc
	started  []api.ProcessRequest
	// contexts are each session's code contexts beside the default one;
	// restarted the ids RestartContext was asked for.
	contexts  map[string][]api.CodeContext
	restarted []string
}

func newFakeDaemon(now func() time.Time) *fakeDaemon {
	return &fakeDaemon{now: now, sessions: map[string]*api.Session{}}
}

func (f *fakeDaemon) CreateSession(_ context.Context, req *api.CreateSessionRequest) (*api.Session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.Template == "missing" {
		return nil, errdefs.ErrNotFound.WithMessage("no template missing")
	}
	f.n++
	s := &api.Session{
		ID: fmt.Sprintf("%016x", f.n), Template: req.Template, Status: api.StatusRunning,
		CreatedAt: f.now().Add(time.Duration(f.n) * time.Millisecond), Labels: maps.Clone(req.Labels),
		Limits:  api.Limits{CPUs: 1, MemoryMB: 512, DiskMB: 1024},
		Network: req.Network, Allow: req.Allow,
	}
	if req.Network == "" {
		s.Network = "none"
	}
	if req.DeadlineS != nil && *req.DeadlineS > 0 {
		d := f.now().Add(time.Duration(*req.DeadlineS) * time.Second)
		s.Deadline = &d
	}
	f.sessions[s.ID] = s
	f.created = append(f.created, *req)
	out := *s
	return &out, nil
}

func (f *fakeDaemon) get(id string) (*api.Session, error) {
	s, ok := f.sessions[id]
	if !ok {
		return nil, errdefs.ErrNotFound.WithMessage("no session " + id)
	}
	return s, nil
}

func (f *fakeDaemon) GetSession(_ context.Context, id string) (*api.Session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.get(id)
	if err != nil {
		return nil, err
	}
	out := *s
	return &out, nil
}

func (f *fakeDaemon) ListSessions(_ context.Context, labels map[string]string) ([]api.Session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []api.Session{}
next:
	for _, s := range f.sessions {
		for k, v := range labels {
			if s.Labels[k] != v {
				continue next
			}
		}
		out = append(out, *s)
	}
	return out, nil
}

func (f *fakeDaemon) DeleteSession(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.get(id); err != nil {
		return err
	}
	delete(f.sessions, id)
	f.deleted = append(f.deleted, id)
	return nil
}

func (f *fakeDaemon) setStatus(id, from, to string) (*api.Session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.get(id)
	if err != nil {
		return nil, err
	}
	if s.Status != from {
		return nil, errdefs.ErrConflict.WithMessage("session is " + s.Status)
	}
	s.Status = to
	out := *s
	return &out, nil
}

func (f *fakeDaemon) PauseSession(_ context.Context, id string) (*api.Session, error) {
	return f.setStatus(id, api.StatusRunning, api.StatusPaused)
}

func (f *fakeDaemon) ResumeSession(ctx context.Context, id string) (*api.Session, error) {
	f.mu.Lock()
	hibernated := f.sessions[id] != nil && f.sessions[id].Status == api.StatusHibernated
	f.mu.Unlock()
	if hibernated {
		return f.setStatus(id, api.StatusHibernated, api.StatusRunning)
	}
	return f.setStatus(id, api.StatusPaused, api.StatusRunning)
}

func (f *fakeDaemon) Stats(_ context.Context, id string) (*api.Stats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.get(id); err != nil {
		return nil, err
	}
	return &api.Stats{UptimeS: 10, CPUSeconds: 5, MemoryBytes: 1 << 20, MemoryLimitBytes: 512 << 20, DiskBytes: 4096, DiskLimitBytes: 1 << 30}, nil
}

func (f *fakeDaemon) SetDeadline(_ context.Context, id string, seconds int) (*api.Session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.get(id)
	if err != nil {
		return nil, err
	}
	s.Deadline = nil
	if seconds > 0 {
		d := f.now().Add(time.Duration(seconds) * time.Second)
		s.Deadline = &d
	}
	out := *s
	return &out, nil
}

// hibernate marks a session hibernated, as sandboxd's idle_action
// "hibernate" would.
func (f *fakeDaemon) hibernate(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sessions[id].Status = api.StatusHibernated
}

// end marks a session stopped, as its deadline would.
func (f *fakeDaemon) end(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sessions[id].Status = api.StatusStopped
}

// Exec answers what the fake's code asks: "print" streams a line, "boom"
// raises, "figure" shows a PNG, anything else is its own result.
func (f *fakeDaemon) Exec(_ context.Context, id string, req *api.ExecRequest, onEvent func(api.Event)) (*api.Execution, error) {
	f.mu.Lock()
	_, err := f.get(id)
	f.execs = append(f.execs, *req)
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	e := &api.Execution{Status: api.StatusOK, Language: req.Language}
	switch req.Code {
	case "print":
		onEvent(api.Event{Type: api.EventStdout, Data: "hello\n"})
		e.Stdout = "hello\n"
	case "boom":
		e.Status = api.StatusError
		e.Error = &api.ExecError{Name: "ValueError", Value: "boom", Traceback: "Traceback …"}
	case "figure":
		shown := api.Output{MIME: "text/html", Data: "PGI+aGk8L2I+", Bundle: map[string]string{"text/html": "<b>hi</b>", "text/plain": "hi"}}
		onEvent(api.Event{Type: api.EventDisplay, Output: &shown})
		e.Outputs = []api.Output{shown, {MIME: "image/png", Data: "iVBORw0K"}}
	case "exit":
		e.ExitCode = 3
	default:
		r := req.Code
		e.Result = &r
		e.Outputs = []api.Output{{MIME: "text/html", Bundle: map[string]string{"text/plain": r, "text/html": "<i>" + r + "</i>"}}}
	}
	return e, nil
}

// files are the fake sessions' files, by session and path.
func (f *fakeDaemon) GetFile(_ context.Context, id, path string) (io.ReadCloser, *api.FileList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.get(id); err != nil {
		return nil, nil, err
	}
	if path == "/workspace" {
		return nil, &api.FileList{}, nil
	}
	b, ok := f.files[id+":"+path]
	if !ok {
		return nil, nil, errdefs.ErrNotFound.WithMessage("no file " + path)
	}
	return io.NopCloser(bytes.NewReader(b)), nil, nil
}

func (f *fakeDaemon) PutFile(ctx context.Context, id, path string, content io.Reader) (*api.FileWritten, error) {
	return f.PutFileMeta(ctx, id, path, content, nil)
}

func (f *fakeDaemon) PutFileMeta(_ context.Context, id, path string, content io.Reader, meta map[string]string) (*api.FileWritten, error) {
	if !strings.HasPrefix(path, "/workspace/") && !strings.HasPrefix(path, "/tmp/") {
		return nil, errdefs.ErrInvalidArgument.WithMessage("files live under /workspace and /tmp")
	}
	b, err := io.ReadAll(content)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.get(id); err != nil {
		return nil, err
	}
	if f.files == nil {
		f.files = map[string][]byte{}
	}
	f.files[id+":"+path] = b
	if f.meta == nil {
		f.meta = map[string]map[string]string{}
	}
	f.meta[id+":"+path] = meta
	return &api.FileWritten{Path: path, Size: int64(len(b))}, nil
}

func (f *fakeDaemon) DeleteFile(_ context.Context, id, path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.files[id+":"+path]; !ok {
		return errdefs.ErrNotFound.WithMessage("no file " + path)
	}
	delete(f.files, id+":"+path)
	return nil
}

func (f *fakeDaemon) StatFile(_ context.Context, id, path string) (*api.FileStat, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.files[id+":"+path]
	if !ok {
		return nil, errdefs.ErrNotFound.WithMessage("no file " + path)
	}
	return &api.FileStat{Name: path[strings.LastIndex(path, "/")+1:], Path: path, Type: "file", Size: int64(len(b)), Mode: "0644",
		Permissions: "-rw-r--r--", Owner: "user", Group: "user", ModifiedAt: f.now(), Metadata: f.meta[id+":"+path]}, nil
}

func (f *fakeDaemon) MakeFolder(_ context.Context, id, path string) (*api.FolderMade, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dirs == nil {
		f.dirs = map[string]bool{}
	}
	made := !f.dirs[id+":"+path]
	f.dirs[id+":"+path] = true
	return &api.FolderMade{FileStat: api.FileStat{Name: path[strings.LastIndex(path, "/")+1:], Path: path, Type: "dir", Mode: "0755"}, Created: made}, nil
}

func (f *fakeDaemon) MoveFile(_ context.Context, id, from, to string) (*api.FileStat, error) {
	f.mu.Lock()
	b, ok := f.files[id+":"+from]
	if ok {
		delete(f.files, id+":"+from)
		f.files[id+":"+to] = b
	}
	f.mu.Unlock()
	if !ok {
		return nil, errdefs.ErrNotFound.WithMessage("no file " + from)
	}
	return f.StatFile(context.Background(), id, to)
}

func (f *fakeDaemon) ListFolder(_ context.Context, id, dir string, depth int) (*api.FileList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := &api.FileList{}
	for k, b := range f.files {
		p, ok := strings.CutPrefix(k, id+":"+dir+"/")
		if !ok || (depth == 1 && strings.Contains(p, "/")) {
			continue
		}
		out.Entries = append(out.Entries, api.FileInfo{Name: p[strings.LastIndex(p, "/")+1:], Type: "file", Size: int64(len(b)), Mode: "0640", Permissions: "-rw-r-----", Path: dir + "/" + p, Metadata: f.meta[k]})
	}
	return out, nil
}

// WatchFiles sends the events queued in f.events, then waits for ctx.
func (f *fakeDaemon) WatchFiles(ctx context.Context, id, path string, recursive bool, opened func(), fn func(api.FileEvent) error) error {
	if opened != nil {
		opened()
	}
	for _, e := range f.events {
		if err := fn(e); err != nil {
			return err
		}
	}
	<-ctx.Done()
	return ctx.Err()
}

// fakeProc is an attached process of the fake: it prints its argv's last
// word on stdout, "err" on stderr, echoes its input, and ends with 0 when
// its input closes (or 137 when killed).
type fakeProc struct {
	info   api.Process
	out    []api.ProcessOutput
	exit   *int
	change chan struct{}
}

func (f *fakeDaemon) StartProcess(_ context.Context, id string, req *api.ProcessRequest) (*api.Process, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.procs == nil {
		f.procs = map[int]*fakeProc{}
	}
	pid := 100 + len(f.procs)
	p := &fakeProc{info: api.Process{PID: pid, Attached: true, Argv: req.Argv, Env: req.Env, Cwd: req.Cwd, Tag: req.Tag, TTY: req.TTY}, change: make(chan struct{})}
	p.out = append(p.out, api.ProcessOutput{Stream: api.StreamStdout, DataB64: base64.StdEncoding.EncodeToString([]byte(req.Argv[len(req.Argv)-1]))},
		api.ProcessOutput{Stream: api.StreamStderr, DataB64: base64.StdEncoding.EncodeToString([]byte("err"))})
	f.procs[pid] = p
	f.started = append(f.started, *req)
	out := p.info
	return &out, nil
}

func (f *fakeDaemon) Processes(_ context.Context, id string) ([]api.Process, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []api.Process
	for _, p := range f.procs {
		if p.exit == nil {
			out = append(out, p.info)
		}
	}
	return out, nil
}

func (f *fakeDaemon) endProc(p *fakeProc, code int) {
	p.exit = &code
	close(p.change)
	p.change = make(chan struct{})
}

func (f *fakeDaemon) SignalProcess(_ context.Context, id string, pid int, signal string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.procs[pid]
	if !ok || p.exit != nil {
		return errdefs.ErrNotFound.WithMessage("no process")
	}
	f.endProc(p, 137)
	return nil
}

func (f *fakeDaemon) WriteStdin(_ context.Context, id string, pid int, b []byte, eof bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.procs[pid]
	if !ok {
		return errdefs.ErrNotFound.WithMessage("no process")
	}
	if p.exit != nil {
		return errdefs.ErrConflict.WithMessage("it ended")
	}
	if len(b) > 0 {
		p.out = append(p.out, api.ProcessOutput{Stream: api.StreamStdout, DataB64: base64.StdEncoding.EncodeToString(b)})
		close(p.change)
		p.change = make(chan struct{})
	}
	if eof {
		f.endProc(p, 0)
	}
	return nil
}

func (f *fakeDaemon) ResizeProcess(_ context.Context, id string, pid int, size api.TermSize) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.procs[pid]
	if !ok {
		return errdefs.ErrNotFound.WithMessage("no process")
	}
	p.info.TTY = &size
	return nil
}

func (f *fakeDaemon) ProcessOutput(ctx context.Context, id string, pid int, from string, follow bool, opened func(), fn func(api.ProcessOutput) error) error {
	f.mu.Lock()
	p, ok := f.procs[pid]
	next := 0
	if ok && from == "now" {
		next = len(p.out)
	}
	f.mu.Unlock()
	if !ok {
		return errdefs.ErrNotFound.WithMessage("no process")
	}
	opened()
	for {
		f.mu.Lock()
		batch := p.out[next:]
		next = len(p.out)
		exit, change := p.exit, p.change
		f.mu.Unlock()
		for _, o := range batch {
			if err := fn(o); err != nil {
				return err
			}
		}
		if exit != nil {
			return fn(api.ProcessOutput{ExitCode: exit})
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-change:
		}
	}
}
