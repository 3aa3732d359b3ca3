package mcpserver

import (
	"strings"
	"testing"
)

// TestAttachedProcessTools: start_process with stdin feeds the command and
// closes its input, with stdin_open keeps it open for write_stdin, names it
// with tag; process_logs reads such a process's output, which has no log,
// from an offset and says how it ended.
func TestAttachedProcessTools(t *testing.T) {
	f, c := newFakeDaemon(t)
	cs := connect(t, New(c, Options{}))

	// Plain: no stdin, the request as it always was, but a tag.
	_, _, out := call(t, cs, "start_process", map[string]any{"command": "serve", "tag": "web"})
	if p, _ := out["process"].(map[string]any); p["pid"] != float64(42) || p["tag"] != "web" {
		t.Fatalf("start_process with a tag: %v", out)
	}

	// stdin: written, then closed.
	_, text, out := call(t, cs, "start_process", map[string]any{"command": "cat", "stdin": "some input\n", "tag": "feed"})
	p, _ := out["process"].(map[string]any)
	f.mu.Lock()
	got := f.attached
	f.mu.Unlock()
	if p["pid"] != float64(43) || !got.req.Stdin || got.req.Tag != "feed" || got.input != "some input\n" || !got.closed ||
		!strings.Contains(text, "wrote 11 bytes to its input and closed it") {
		t.Fatalf("start_process with stdin: %q %v; the daemon got %+v", text, out, got)
	}
	if _, text, out = call(t, cs, "process_logs", map[string]any{"pid": 43}); out["output"] != "hello\nwarn\n" || out["next_offset"] != float64(11) ||
		out["running"] != false || out["exit_code"] != float64(0) || !strings.Contains(text, "exit code 0") {
		t.Fatalf("process_logs of an attached process: %q %v", text, out)
	}
	if _, text, out = call(t, cs, "process_logs", map[string]any{"pid": 43, "offset": 8}); out["output"] != "rn\n" || out["next_offset"] != float64(11) {
		t.Fatalf("process_logs of an attached process from 8: %q %v", text, out)
	}

	// stdin_open: input kept open, written to with write_stdin; the
	// process runs until it is closed.
	_, text, _ = call(t, cs, "start_process", map[string]any{"command": "python3 -i", "stdin": "x = 1\n", "stdin_open": true})
	f.mu.Lock()
	got = f.attached
	f.mu.Unlock()
	if got.input != "x = 1\n" || got.closed || !strings.Contains(text, "write_stdin") {
		t.Fatalf("start_process with stdin_open: %q; the daemon got %+v", text, got)
	}
	if _, text, out = call(t, cs, "process_logs", map[string]any{"pid": 43}); out["running"] != true || out["exit_code"] != nil || !strings.Contains(text, "still runs") {
		t.Fatalf("process_logs of a running attached process: %q %v", text, out)
	}
	if _, text, out = call(t, cs, "write_stdin", map[string]any{"pid": 43, "text": "print(x)\n"}); out["bytes"] != float64(9) || out["closed"] != nil || !strings.Contains(text, "wrote 9 bytes") {
		t.Fatalf("write_stdin: %q %v", text, out)
	}
	if _, text, out = call(t, cs, "write_stdin", map[string]any{"pid": 43, "eof": true}); out["closed"] != true || !strings.Contains(text, "closed it") {
		t.Fatalf("write_stdin eof: %q %v", text, out)
	}
	f.mu.Lock()
	got = f.attached
	f.mu.Unlock()
	if got.input != "x = 1\nprint(x)\n" || !got.closed {
		t.Fatalf("the daemon got %+v", got)
	}
	if res, text, _ := call(t, cs, "write_stdin", map[string]any{"pid": 43, "text": "late"}); !res.IsError || !strings.Contains(text, "ended") {
		t.Fatalf("write_stdin once closed: %q", text)
	}
	if res, text, _ := call(t, cs, "write_stdin", map[string]any{"pid": 43}); !res.IsError || !strings.Contains(text, "text is required") {
		t.Fatalf("write_stdin of nothing: %q", text)
	}
	if res, text, _ := call(t, cs, "write_stdin", map[string]any{"pid": 7, "text": "x"}); !res.IsError || !strings.Contains(text, "not found") {
		t.Fatalf("write_stdin to no such process: %q", text)
	}

	// A command that ended before it read its input is started all the
	// same: the text is not read, as in a shell pipe.
	if res, text, out := call(t, cs, "start_process", map[string]any{"command": "quick", "stdin": "unread"}); res.IsError || !strings.Contains(text, "ended before it read its input") || out["process"] == nil {
		t.Fatalf("start_process of a command that ignores its input: %q %v", text, out)
	}
	// Neither a log nor held output: not found.
	if res, text, _ := call(t, cs, "process_logs", map[string]any{"pid": 7}); !res.IsError || !strings.Contains(text, "not found") {
		t.Fatalf("process_logs of no such process: %q", text)
	}
}

// TestAttachedLogsCut: an attached process's output longer than a result
// carries is cut there, next_offset where it was cut, and the process not
// said to have ended while output is left.
func TestAttachedLogsCut(t *testing.T) {
	f, c := newFakeDaemon(t)
	s := New(c, Options{MaxText: 8})
	_, _, started := call(t, connect(t, s), "start_process", map[string]any{"command": "cat", "stdin": "x"})
	f.mu.Lock()
	closed := f.attached.closed
	f.mu.Unlock()
	if !closed {
		t.Fatal("the input was not closed")
	}
	out := LogsOutput{}
	if err := s.attachedLogs(t.Context(), started["session_id"].(string), 43, 0, 8, &out); err != nil {
		t.Fatal(err)
	}
	if out.Output != "hello\nwa" || out.NextOffset != 8 || !out.Running || out.ExitCode != nil {
		t.Fatalf("cut output: %+v", out)
	}
}
