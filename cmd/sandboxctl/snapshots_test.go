package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// fakeDaemon is a daemon stand-in on a Unix socket: it answers each
// "METHOD path" from answers (404 otherwise) and keeps the last request.
type fakeDaemon struct {
	sock string

	mu    sync.Mutex
	asked string // "METHOD path"
	body  string
}

func newFakeDaemon(t *testing.T, answers map[string]any) *fakeDaemon {
	t.Helper()
	f := &fakeDaemon{sock: filepath.Join(t.TempDir(), "d.sock")}
	l, err := net.Listen("unix", f.sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		route := r.Method + " " + r.URL.Path
		f.mu.Lock()
		f.asked, f.body = route, string(b)
		f.mu.Unlock()
		a, ok := answers[route]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(api.ErrorBody{Error: api.ErrorDetail{Code: api.CodeNotFound, Message: "no such thing"}})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.Method == "POST" {
			w.WriteHeader(http.StatusCreated)
		}
		json.NewEncoder(w).Encode(a)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return f
}

// last is the last request the stand-in got and its body.
func (f *fakeDaemon) last() (string, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked, f.body
}

// run runs sandboxctl with args against f and answers what it printed.
func (f *fakeDaemon) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs(append([]string{"--socket", f.sock}, args...))
	err := root.Execute()
	return out.String(), err
}

// TestSnapshotCommands runs the snapshot, fork and create --snapshot
// commands against a stand-in and checks what each asked and printed.
func TestSnapshotCommands(t *testing.T) {
	snaps := []api.Snapshot{
		{ID: "5a5a5a5a5a5a5a5a", SessionID: "0123abcd0123abcd", Name: "warm", OwnerUID: 1000, Template: "python", Runtime: "runc", SizeMB: 3, CreatedAt: time.Now().Add(-time.Hour)},
		{ID: "6b6b6b6b6b6b6b6b", SessionID: "0123abcd0123abcd", OwnerUID: 1000, Template: "python", Runtime: "runsc", SizeMB: 1, CreatedAt: time.Now().Add(-72 * time.Hour)},
	}
	two := api.SessionList{Sessions: []api.Session{{ID: "aaaa0000aaaa0000"}, {ID: "bbbb0000bbbb0000"}}}
	f := newFakeDaemon(t, map[string]any{
		"GET /v1/snapshots":                 api.SnapshotList{Snapshots: snaps},
		"GET /v1/snapshots/warm":            snaps[0],
		"POST /v1/sessions/s1/snapshots":    snaps[0],
		"POST /v1/sessions/s1/fork":         two,
		"POST /v1/sessions":                 two,
		"DELETE /v1/snapshots/warm":         nil,
		"DELETE /v1/snapshots/6b6b6b6b6b6b": nil,
	})

	for _, c := range []struct {
		name  string
		args  []string
		asked string
		body  string   // the request's JSON ("" none)
		out   []string // lines printed, each whitespace-collapsed
	}{
		{"ls table", []string{"snapshot", "ls"}, "GET /v1/snapshots", "", []string{
			"ID NAME SESSION OWNER TEMPLATE RUNTIME MEMORY SIZE CREATED",
			"5a5a5a5a5a5a5a5a warm 0123abcd0123abcd 1000 python runc no 3 MB 1 hours ago",
			"6b6b6b6b6b6b6b6b - 0123abcd0123abcd 1000 python runsc no 1 MB 3 days ago",
		}},
		{"ls quiet", []string{"snapshot", "ls", "-q"}, "GET /v1/snapshots", "", []string{"5a5a5a5a5a5a5a5a", "6b6b6b6b6b6b6b6b"}},
		{"create", []string{"snapshot", "create", "s1", "--name", "warm"}, "POST /v1/sessions/s1/snapshots", `{"name":"warm"}`, []string{"5a5a5a5a5a5a5a5a"}},
		{"create unnamed", []string{"snapshot", "create", "s1"}, "POST /v1/sessions/s1/snapshots", `{}`, []string{"5a5a5a5a5a5a5a5a"}},
		{"rm", []string{"snapshot", "rm", "warm", "6b6b6b6b6b6b"}, "DELETE /v1/snapshots/6b6b6b6b6b6b", "", nil},
		{"fork", []string{"fork", "s1"}, "POST /v1/sessions/s1/fork", `{"count":1}`, []string{"aaaa0000aaaa0000", "bbbb0000bbbb0000"}},
		{"fork count", []string{"fork", "s1", "--count", "2"}, "POST /v1/sessions/s1/fork", `{"count":2}`, []string{"aaaa0000aaaa0000", "bbbb0000bbbb0000"}},
		{"create from snapshot, count", []string{"create", "--snapshot", "warm", "--count", "2", "-l", "k=v"}, "POST /v1/sessions",
			`{"labels":{"k":"v"},"snapshot":"warm","count":2}`, []string{"aaaa0000aaaa0000", "bbbb0000bbbb0000"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := f.run(t, c.args...)
			if err != nil {
				t.Fatalf("%q: %v", c.args, err)
			}
			asked, body := f.last()
			if asked != c.asked || strings.TrimSpace(body) != c.body {
				t.Errorf("%q asked %s %s, want %s %s", c.args, asked, body, c.asked, c.body)
			}
			var lines []string
			for l := range strings.Lines(out) {
				lines = append(lines, strings.Join(strings.Fields(l), " "))
			}
			if strings.Join(lines, "\n") != strings.Join(c.out, "\n") {
				t.Errorf("%q printed\n%s\nwant\n%s", c.args, out, strings.Join(c.out, "\n"))
			}
		})
	}
}

// TestSnapshotJSON checks that snapshot ls --json and fork --json print
// what the daemon answered, as JSON a program reads back.
func TestSnapshotJSON(t *testing.T) {
	at := time.Date(2026, 11, 23, 15, 4, 5, 0, time.UTC)
	snaps := api.SnapshotList{Snapshots: []api.Snapshot{{ID: "5a5a", SessionID: "0123", Name: "warm", OwnerUID: 1000, Template: "python", Runtime: "runc", SizeMB: 3, CreatedAt: at}}}
	forks := []api.Session{{ID: "aaaa", Template: "python", Status: "running"}, {ID: "bbbb", Template: "python", Status: "running"}}
	f := newFakeDaemon(t, map[string]any{
		"GET /v1/snapshots":         snaps,
		"POST /v1/sessions/s1/fork": api.SessionList{Sessions: forks},
	})
	for _, c := range []struct {
		args []string
		into any
		want any
	}{
		{[]string{"snapshot", "ls", "--json"}, &api.SnapshotList{}, &snaps},
		{[]string{"fork", "s1", "--count", "2", "--json"}, &[]api.Session{}, &forks},
	} {
		out, err := f.run(t, c.args...)
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		if err := json.Unmarshal([]byte(out), c.into); err != nil {
			t.Fatalf("%q printed what is not its JSON: %v\n%s", c.args, err, out)
		}
		got, _ := json.Marshal(c.into)
		want, _ := json.Marshal(c.want)
		if !bytes.Equal(got, want) {
			t.Errorf("%q printed %s, want %s", c.args, got, want)
		}
	}
}

// TestSnapshotErrors checks that a refusal comes back as the daemon's
// sentence, and that flags that cannot go together are refused before
// any request.
func TestSnapshotErrors(t *testing.T) {
	f := newFakeDaemon(t, nil)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"snapshot", "inspect", "nope"}, "no such thing"},
		{[]string{"create", "--snapshot", "warm", "--count", "2", "--idempotency-key", "k"}, "give --idempotency-key or --count, not both"},
	} {
		if _, err := f.run(t, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
	}
}
