package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// fakePath answers as sandboxfs would for a few paths: one outside the
// served roots (or through a symlink out, "out/…") is invalid, "nope" and
// any other session than s1 not found, "file" not a folder.
func fakePath(id, p string) error {
	switch {
	case id != "s1":
		return errdefs.ErrNotFound.WithMessage("no such session")
	case p == "":
		return errdefs.ErrInvalidArgument.WithMessage("a path is required")
	case strings.HasPrefix(p, "/etc"), strings.Contains(p, ".."), strings.HasPrefix(p, "out/"):
		return errdefs.ErrInvalidArgument.WithMessage("bad path")
	case p == "nope":
		return errdefs.ErrNotFound.WithMessage("no such file")
	}
	return nil
}

func (f *fakeBackend) StatFile(_ context.Context, id, p string) (*api.FileStat, error) {
	if err := fakePath(id, p); err != nil {
		return nil, err
	}
	return &api.FileStat{Name: p, Path: "/workspace/" + p, Type: "dir"}, nil
}
func (f *fakeBackend) MakeFolder(_ context.Context, id, p string) (*api.FolderMade, error) {
	if err := fakePath(id, p); err != nil {
		return nil, err
	}
	return &api.FolderMade{FileStat: api.FileStat{Name: p, Type: "dir"}, Created: p != "old"}, nil
}
func (f *fakeBackend) MoveFile(_ context.Context, id, from, to string) (*api.FileStat, error) {
	if err := fakePath(id, from); err != nil {
		return nil, err
	}
	if err := fakePath(id, to); err != nil {
		return nil, err
	}
	if to == "taken" {
		return nil, errdefs.ErrConflict.WithMessage("taken exists")
	}
	return &api.FileStat{Name: to, Type: "file"}, nil
}
func (f *fakeBackend) ListFolder(_ context.Context, id, p string, depth int) (*api.FileList, error) {
	if err := fakePath(id, p); err != nil {
		return nil, err
	}
	if depth > 16 {
		return nil, errdefs.ErrInvalidArgument.WithMessage("bad depth")
	}
	return &api.FileList{Entries: []api.FileInfo{{Name: "b", Path: "/workspace/a/b"}}}, nil
}
func (f *fakeBackend) WatchFiles(ctx context.Context, id, p string, _ bool, opened func(), send func(api.FileEvent) error) error {
	if err := fakePath(id, p); err != nil {
		return err
	}
	opened()
	if err := send(api.FileEvent{Type: api.FileCreate, Path: "/workspace/new.txt"}); err != nil {
		return err
	}
	if p == "ends" {
		return errdefs.ErrResourceExhausted.WithMessage("too many folders")
	}
	<-ctx.Done()
	return nil
}

func (f *fakeBackend) PutFileMeta(ctx context.Context, id, p string, body io.Reader, meta map[string]string) (*api.FileWritten, error) {
	f.mu.Lock()
	f.meta = meta
	f.mu.Unlock()
	return f.PutFile(ctx, id, p, body)
}

func TestPutFileMetadata(t *testing.T) {
	b := &fakeBackend{}
	s := newTestServer(b, Options{MaxUploadBytes: 100}, &strings.Builder{})
	put := func(target string, hdr map[string]string) int {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("PUT", target, strings.NewReader("x"))
		for k, v := range hdr {
			req.Header[k] = []string{v} // as sent, not canonical
		}
		s.Handler().ServeHTTP(rec, req.WithContext(context.WithValue(req.Context(), credKey{}, testCaller)))
		return rec.Code
	}
	if code := put("/v1/sessions/s1/files?path=f", map[string]string{"X-Sandboxd-Meta-Author": "ada", "x-sandboxd-meta-PURPOSE": "test", "X-Other": "no"}); code != 201 {
		t.Fatalf("put: %d", code)
	}
	if !maps.Equal(b.meta, map[string]string{"author": "ada", "purpose": "test"}) {
		t.Fatalf("the metadata passed on: %v", b.meta)
	}
	if put("/v1/sessions/s1/files?path=f", nil); b.meta != nil {
		t.Fatalf("no headers, yet metadata: %v", b.meta)
	}
	if code := put("/v1/sessions/s1/files?path=d&format=tar", map[string]string{"X-Sandboxd-Meta-Author": "ada"}); code != 400 {
		t.Fatalf("a tar with metadata: %d", code)
	}
}

func TestFileOpsBadInput(t *testing.T) {
	s := newTestServer(&fakeBackend{}, Options{}, &strings.Builder{})
	for _, c := range []struct {
		method, target, body string
		status               int
	}{
		{"GET", "/v1/sessions/s1/files/stat", "", 400},
		{"GET", "/v1/sessions/s1/files/stat?path=/etc/passwd", "", 400},
		{"GET", "/v1/sessions/s1/files/stat?path=../x", "", 400},
		{"GET", "/v1/sessions/s1/files/stat?path=nope", "", 404},
		{"GET", "/v1/sessions/s2/files/stat?path=d", "", 404},
		{"GET", "/v1/sessions/s1/files/stat?path=d&depth=2", "", 400},
		{"GET", "/v1/sessions/s1/files/stat?path=d", "", 200},
		{"GET", "/v1/sessions/s1/files?path=d&depth=0", "", 400},
		{"GET", "/v1/sessions/s1/files?path=d&depth=x", "", 400},
		{"GET", "/v1/sessions/s1/files?path=d&depth=-1", "", 400},
		{"GET", "/v1/sessions/s1/files?path=d&depth=17", "", 400},
		{"GET", "/v1/sessions/s1/files?path=d&depth=2&format=tar", "", 400},
		{"GET", "/v1/sessions/s1/files?path=out/x&depth=2", "", 400},
		{"GET", "/v1/sessions/s1/files?depth=2", "", 400},
		{"GET", "/v1/sessions/s1/files?path=d&depth=2", "", 200},
		{"PUT", "/v1/sessions/s1/files?path=f&depth=1", "x", 400},
		{"POST", "/v1/sessions/s1/files/mkdir", `{}`, 400},
		{"POST", "/v1/sessions/s1/files/mkdir", `{"path":"d","mode":1}`, 400},
		{"POST", "/v1/sessions/s1/files/mkdir", `{"path":"/etc/x"}`, 400},
		{"POST", "/v1/sessions/s1/files/mkdir", `{"path":"new"}`, 201},
		{"POST", "/v1/sessions/s1/files/mkdir", `{"path":"old"}`, 200},
		{"POST", "/v1/sessions/s1/files/move", `{"from":"d"}`, 400},
		{"POST", "/v1/sessions/s1/files/move", `{"from":"d","to":"out/d"}`, 400},
		{"POST", "/v1/sessions/s1/files/move", `{"from":"d","to":"taken"}`, 409},
		{"POST", "/v1/sessions/s1/files/move", `{"from":"d","to":"d2"}`, 200},
		{"GET", "/v1/sessions/s1/files/watch", "", 400},
		{"GET", "/v1/sessions/s1/files/watch?path=out/x", "", 400},
		{"GET", "/v1/sessions/s1/files/watch?path=d&recursive=maybe", "", 400},
		{"GET", "/v1/sessions/s1/files/watch?path=d&depth=2", "", 400},
		{"GET", "/v1/sessions/s1/files/watch?path=nope", "", 404},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(c.method, c.target, strings.NewReader(c.body))
		s.Handler().ServeHTTP(rec, req.WithContext(context.WithValue(req.Context(), credKey{}, testCaller)))
		if rec.Code != c.status {
			t.Errorf("%s %s %s: %d %s, want %d", c.method, c.target, c.body, rec.Code, rec.Body, c.status)
		}
	}
}

func TestWatchStream(t *testing.T) {
	s := newTestServer(&fakeBackend{}, Options{}, &strings.Builder{})
	h := s.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), credKey{}, testCaller)))
	}))
	defer srv.Close()
	watch := func(path string) (*bufio.Scanner, func()) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/sessions/s1/files/watch?recursive=1&path="+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != api.StreamMIME {
			t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		return bufio.NewScanner(resp.Body), func() { resp.Body.Close(); cancel() }
	}
	sc, done := watch("d")
	defer done()
	var ev api.FileEvent
	if !sc.Scan() || json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Type != "create" || ev.Path != "/workspace/new.txt" {
		t.Fatalf("event %s: %v", sc.Bytes(), sc.Err())
	}
	// A failure after the 200 is the stream's last line.
	sc, done2 := watch("ends")
	defer done2()
	sc.Scan()
	var last api.Event
	if !sc.Scan() || json.Unmarshal(sc.Bytes(), &last) != nil || last.Type != api.EventError || last.Error.Code != api.CodeResourceExhausted {
		t.Fatalf("last line %s", sc.Bytes())
	}
	if sc.Scan() {
		t.Fatalf("more after the end: %s", sc.Bytes())
	}
}

// TestFileOpsClient: the Go client's calls reach the routes and turn
// their errors back into their classes.
func TestFileOpsClient(t *testing.T) {
	_, c, _ := serve(t)
	ctx := context.Background()
	if st, err := c.StatFile(ctx, "s1", "d"); err != nil || st.Type != "dir" {
		t.Fatalf("stat: %+v %v", st, err)
	}
	if _, err := c.StatFile(ctx, "s1", "nope"); !errdefs.IsNotFound(err) {
		t.Fatalf("stat missing: %v", err)
	}
	if m, err := c.MakeFolder(ctx, "s1", "old"); err != nil || m.Created {
		t.Fatalf("mkdir: %+v %v", m, err)
	}
	if _, err := c.MoveFile(ctx, "s1", "a", "taken"); !errdefs.IsConflict(err) {
		t.Fatalf("move over: %v", err)
	}
	if l, err := c.ListFolder(ctx, "s1", "a", 3); err != nil || l.Entries[0].Path != "/workspace/a/b" {
		t.Fatalf("list: %+v %v", l, err)
	}
	var got []api.FileEvent
	err := c.WatchFiles(ctx, "s1", "ends", true, nil, func(e api.FileEvent) error {
		got = append(got, e)
		return nil
	})
	if !errdefs.IsResourceExhausted(err) || len(got) != 1 || got[0].Type != api.FileCreate {
		t.Fatalf("watch: %v %v", got, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := c.WatchFiles(wctx, "s1", "d", false, nil, func(api.FileEvent) error { return nil }); err != context.DeadlineExceeded {
		t.Fatalf("watch until ctx ends: %v", err)
	}
}
