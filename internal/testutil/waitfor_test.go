package testutil

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestWaitFor: it returns once the condition holds, and fails the test
// with the message when the condition never does.
func TestWaitFor(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	WaitFor(t, 10*time.Second, func() bool { return n.Add(1) == 3 }, "never three")

	ft := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		WaitFor(ft, 20*time.Millisecond, func() bool { return false }, "the %s never came", "answer")
	}()
	<-done
	if !strings.Contains(ft.msg, "the answer never came") {
		t.Fatalf("WaitFor failed with %q", ft.msg)
	}
}

// fakeTB records a Fatalf and ends its goroutine, as testing.T does.
type fakeTB struct {
	testing.TB
	msg string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
