package main

import (
	"bufio"
	"bytes"
	"context"
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

func TestEventTime(t *testing.T) {
	now := time.Date(2026, 11, 23, 15, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		flag, in string
		sign     time.Duration
		want     time.Time
		ok       bool
	}{
		{"since", "", -1, time.Time{}, true},
		{"since", "10m", -1, now.Add(-10 * time.Minute), true},
		{"until", "10m", +1, now.Add(10 * time.Minute), true},
		{"until", "0s", +1, now, true},
		{"until", "0", +1, now, true},
		{"since", "1h30m", -1, now.Add(-90 * time.Minute), true},
		{"since", "2026-11-23T15:00:00Z", -1, now.Add(-245 * time.Second), true},
		{"since", "1795446245", -1, now, true},
		{"since", "yesterday", -1, time.Time{}, false},
		{"until", "10", +1, time.Unix(10, 0).UTC(), true}, // Unix seconds, not a duration
	} {
		got, err := eventTime(c.flag, c.in, now, c.sign)
		if (err == nil) != c.ok || !got.Equal(c.want) {
			t.Errorf("--%s %q: %v %v, want %v", c.flag, c.in, got, err, c.want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "bad --"+c.flag+" ") {
			t.Errorf("--%s %q: %v", c.flag, c.in, err)
		}
	}
}

func TestEventLine(t *testing.T) {
	at := time.Date(2026, 11, 23, 15, 4, 5, 123, time.FixedZone("x", 3600))
	for _, c := range []struct {
		ev   api.SessionEvent
		want string
	}{
		{api.SessionEvent{Time: at, Type: "session", Action: "stopped", SessionID: "0123abcd", Reason: "idle timeout"},
			"2026-11-23T14:04:05Z session stopped 0123abcd (idle timeout)"},
		{api.SessionEvent{Time: at, Type: "session", Action: "created", SessionID: "0123abcd"},
			"2026-11-23T14:04:05Z session created 0123abcd"},
		{api.SessionEvent{Time: at, Type: "mcp", SessionID: "0123abcd"},
			"2026-11-23T14:04:05Z mcp 0123abcd"},
		{api.SessionEvent{Time: at, Type: "mcp", SessionID: "0123abcd", Server: "search", Tool: "web_search", Outcome: "ok", DurationMS: new(int64(120))},
			"2026-11-23T14:04:05Z mcp 0123abcd search.web_search ok 120ms"},
	} {
		if got := eventLine(&c.ev); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}

// TestEventsCommand runs sandboxctl events against a daemon stand-in that
// streams two events and ends at --until.
func TestEventsCommand(t *testing.T) {
	lines := `{"time":"2026-11-23T15:04:05Z","type":"session","action":"created","session_id":"s1"}` + "\n" +
		`{"time":"2026-11-23T15:04:06Z","type":"session","action":"stopped","session_id":"s1","reason":"idle timeout"}` + "\n"
	var mu sync.Mutex
	var asked string
	sock := filepath.Join(t.TempDir(), "d.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = r.URL.Path + "?" + r.URL.RawQuery
		mu.Unlock()
		w.Header().Set("Content-Type", api.StreamMIME)
		w.Write([]byte(lines))
		if r.URL.Query().Get("until") == "" {
			// No end asked for: stream on until the client hangs up.
			http.NewResponseController(w).Flush()
			<-r.Context().Done()
		}
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })

	for _, c := range []struct {
		args []string
		want string
		ask  string
	}{
		{[]string{"--until", "0s"}, "2026-11-23T15:04:05Z session created s1\n2026-11-23T15:04:06Z session stopped s1 (idle timeout)\n", "/v1/events?until="},
		{[]string{"--until", "0s", "--json", "--session", "s1", "--session", "s2", "--type", "session"}, lines, "?session=s1&session=s2&type=session&until="},
	} {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(append([]string{"--socket", sock, "events"}, c.args...))
		if err := root.Execute(); err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		mu.Lock()
		ok := out.String() == c.want && strings.Contains(asked, c.ask)
		mu.Unlock()
		if !ok {
			t.Errorf("%q printed\n%s\nasked %s", c.args, out.String(), asked)
		}
	}
	// Ctrl-C (here: the command's context ending) is a clean end.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := newRoot()
	pr, pw := io.Pipe()
	root.SetOut(pw)
	root.SetArgs([]string{"--socket", sock, "events"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	if line, err := bufio.NewReader(pr).ReadString('\n'); err != nil || !strings.Contains(line, "session created s1") {
		t.Fatalf("%q %v", line, err)
	}
	go io.Copy(io.Discard, pr)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("interrupted: %v, want a clean end", err)
	}

	root = newRoot()
	root.SetArgs([]string{"--socket", sock, "events", "--since", "last week"})
	if err := root.Execute(); err == nil || !strings.HasPrefix(err.Error(), `bad --since "last week"`) {
		t.Fatalf("a bad --since: %v", err)
	}
}
