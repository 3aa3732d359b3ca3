package execution

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/store"
)

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) AddExecutions([]store.Executed) error {
	return errors.New("no space left on device")
}

// TestRecorderFailureReachesClient: a history write that fails is told to
// the next reader of the session's history, once.
func TestRecorderFailureReachesClient(t *testing.T) {
	counted := 0
	r := NewRecorder(failingWriter{}, slog.New(slog.NewTextHandler(io.Discard, nil)), func() { counted++ })
	defer r.Close()
	r.Add(&store.Executed{SessionID: "a", Execution: &store.Execution{ID: "e1"}})
	r.Add(&store.Executed{SessionID: "a", Execution: &store.Execution{ID: "e2"}})
	r.Flush()
	err := r.TakeFailure("a")
	if !errdefs.IsInternal(err) || !strings.Contains(err.Error(), "2 execution(s)") || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("first read: %v", err)
	}
	if err := r.TakeFailure("a"); err != nil {
		t.Fatalf("told twice: %v", err)
	}
	if err := r.TakeFailure("b"); err != nil {
		t.Fatalf("another session: %v", err)
	}
	if counted == 0 {
		t.Fatal("the failure was not counted")
	}
}
