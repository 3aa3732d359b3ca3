package process

import (
	"context"
	"encoding/base64"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/isolation"
)

// echoProcess is a process that writes "hello" to stdout and "oops" to
// stderr, then echoes its input to stdout until its input closes, and
// ends with 7 once end is closed too.
func echoProcess(t *testing.T, end <-chan struct{}) *isolation.Process {
	t.Helper()
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		outW.Write([]byte("hello"))
		errW.Write([]byte("oops"))
		io.Copy(outW, inR)
		outW.Close()
		errW.Close()
		inR.Close()
		<-end
	}()
	return isolation.NewProcessWithPID(isolation.NewProcess(inW, outR, errR, nil,
		func() (int, error) { <-done; return 7, nil }, func() error { inW.Close(); return nil }), 42)
}

// collect follows a from from until it ends or within passes.
func collect(t *testing.T, a *attached, from int64, follow bool, within time.Duration) (string, []api.ProcessOutput) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), within)
	defer cancel()
	var text strings.Builder
	var all []api.ProcessOutput
	_ = a.follow(ctx, from, follow, func(o api.ProcessOutput) error {
		all = append(all, o)
		b, _ := base64.StdEncoding.DecodeString(o.DataB64)
		text.WriteString(o.Stream + ":" + string(b) + ";")
		return nil
	})
	return text.String(), all
}

func TestAttachedFollow(t *testing.T) {
	t.Parallel()
	end := make(chan struct{})
	a := newAttached(api.Process{PID: 42}, echoProcess(t, end))
	ended := make(chan int, 1)
	go a.pump(func(code int) { ended <- code })
	// What it wrote at once, from the start, without following.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		a.mu.Lock()
		n := a.next
		a.mu.Unlock()
		if n == 9 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first output never came")
		}
	}
	if got, _ := collect(t, a, FromStart, false, time.Second); !strings.Contains(got, "stdout:hello;") || !strings.Contains(got, "stderr:oops;") {
		t.Fatalf("from the start: %s", got)
	}
	if got, _ := collect(t, a, FromNow, false, time.Second); got != "" {
		t.Fatalf("from now, not following: %q", got)
	}
	// A follower from here (where "now" is before any input) sees the
	// input echoed, then the end.
	type res struct {
		text string
		all  []api.ProcessOutput
	}
	followed := make(chan res, 1)
	go func() {
		text, all := collect(t, a, 9, true, 5*time.Second)
		followed <- res{text, all}
	}()
	if err := a.write([]byte("abc"), false); err != nil {
		t.Fatal(err)
	}
	if err := a.write([]byte("d"), true); err != nil {
		t.Fatal(err)
	}
	if err := a.write([]byte("e"), false); err != errStdinClosed {
		t.Fatalf("a write after eof: %v", err)
	}
	close(end)
	r := <-followed
	if !strings.HasPrefix(r.text, "stdout:abc") || !strings.Contains(r.text, "d;") {
		t.Fatalf("followed: %s", r.text)
	}
	last := r.all[len(r.all)-1]
	if last.ExitCode == nil || *last.ExitCode != 7 || last.Offset != 13 {
		t.Fatalf("the end: %+v", last)
	}
	if code := <-ended; code != 7 {
		t.Fatalf("ended with %d", code)
	}
	// From a byte offset, after it ended. The echo read "abc" and "d" in
	// one chunk or in two, as the pipe had them: either joins to "cd".
	if got, _ := collect(t, a, 11, false, time.Second); strings.ReplaceAll(got, ";stdout:", "") != "stdout:cd;:;" {
		t.Fatalf("from offset 11: %q", got)
	}
	if a.running() {
		t.Fatal("it still runs")
	}
	if err := a.write([]byte("x"), false); err != errEnded {
		t.Fatalf("a write after its end: %v", err)
	}
}

func TestAttachedKeepsTheLastMiB(t *testing.T) {
	t.Parallel()
	a := newAttached(api.Process{PID: 1}, nil)
	chunk := strings.Repeat("x", 64<<10)
	for i := 0; i < 20; i++ {
		a.add(api.StreamStdout, []byte(chunk))
	}
	if a.kept > keepOutput || a.lost != 20*int64(len(chunk))-a.kept {
		t.Fatalf("kept %d, lost %d", a.kept, a.lost)
	}
	_, all := collect(t, a, FromStart, false, time.Second)
	if all[0].Lost != a.lost || all[0].Offset != a.lost {
		t.Fatalf("the first piece says lost %d at %d, want %d", all[0].Lost, all[0].Offset, a.lost)
	}
}

func TestBookBoundsAttached(t *testing.T) {
	t.Parallel()
	var b Book
	for i := 0; i < maxAttached; i++ {
		if !b.attach(newAttached(api.Process{PID: i + 1}, nil)) {
			t.Fatalf("attach %d refused", i)
		}
	}
	if b.attach(newAttached(api.Process{PID: 999}, nil)) {
		t.Fatal("one over the bound was taken")
	}
	if b.findAttached(5, "") == nil || b.findAttached(999, "") != nil {
		t.Fatal("findAttached")
	}
}
