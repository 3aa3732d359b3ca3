package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// fakeFigures is a cell after which every cell of the session answers
// ten "figures" of mb MB each: user code can put its own
// matplotlib.pyplot in sys.modules.
func fakeFigures(mb int) string {
	return fmt.Sprintf(`import sys, types
m = types.ModuleType('matplotlib.pyplot')
class F:
    def savefig(self, b, format): b.write(b'x' * (%d << 20))
m.get_fignums = lambda: list(range(10))
m.figure = lambda n: F()
m.close = lambda what: None
sys.modules['matplotlib.pyplot'] = m`, mb)
}

// TestBigAnswersAreNotKept is the reproduction of issue 14: cells that
// answer tens of MB of figures, three times. Each answer is bounded
// (max_answer_bytes), the history keeps each cut to history_record_bytes,
// the history list answers little, the database does not grow by the
// answers, and the daemon's memory comes back to near what it was once
// the session is gone.
func TestBigAnswersAreNotKept(t *testing.T) {
	d := startDaemon(t, "history_record_bytes = 65536\n")
	// The baseline: a daemon that has run a session and answered cells.
	warm := d.session(t, nil)
	d.py(t, warm, "1 + 1")
	if err := d.c.DeleteSession(t.Context(), warm); err != nil {
		t.Fatal(err)
	}
	before := statOf(t, d.cmd.Process.Pid)
	db := filepath.Join(d.base, "data", "sandboxd.db")
	dbBefore := fileSize(t, db)

	id := d.session(t, nil)
	d.py(t, id, fakeFigures(1))
	for range 3 {
		e := d.py(t, id, "'figures'")
		if !e.Truncated || e.Summarized || len(e.Outputs) == 0 {
			t.Fatalf("an answer of 13 MB of figures: %d outputs, truncated %v, summarized %v", len(e.Outputs), e.Truncated, e.Summarized)
		}
	}
	list, err := d.c.Executions(t.Context(), id, 3)
	if err != nil || len(list) != 3 {
		t.Fatalf("history: %d executions, %v", len(list), err)
	}
	for _, sum := range list {
		e, err := d.c.Execution(t.Context(), id, sum.ID)
		if err != nil {
			t.Fatal(err)
		}
		if size := answerSize(e); size > 65536 || !e.Summarized || !e.Truncated || result(e) != "'figures'" {
			t.Fatalf("the history kept %d bytes, summarized %v, truncated %v, result %q", size, e.Summarized, e.Truncated, result(e))
		}
	}
	if b, _ := json.Marshal(list); len(b) > 4*65536 {
		t.Errorf("the history list is %d bytes", len(b))
	}
	dbAfter := fileSize(t, db)
	if err := d.c.DeleteSession(t.Context(), id); err != nil {
		t.Fatal(err)
	}

	// The daemon returns the memory of big answers a moment after them
	// (daemon/memory.go); without that, the Go runtime would keep it until
	// its two-minute collection, and even then not all of it. The issue
	// asks for 20 MiB over the baseline; 10 leaves room for noise and
	// still fails without the return.
	const allowKB = 10 << 10
	var after procStat
	deadline := time.Now().Add(30 * time.Second)
	for {
		after = statOf(t, d.cmd.Process.Pid)
		if after.rssKB <= before.rssKB+allowKB || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("daemon RSS %d KiB before, %d KiB after; database %d -> %d bytes", before.rssKB, after.rssKB, dbBefore, dbAfter)
	if after.rssKB > before.rssKB+allowKB {
		t.Errorf("the daemon's RSS grew by %d KiB and stayed", after.rssKB-before.rssKB)
	}
	if dbAfter > dbBefore+4<<20 {
		t.Errorf("the database grew from %d to %d bytes", dbBefore, dbAfter)
	}
}

// answerSize is the bytes of e's output, result and rich outputs.
func answerSize(e *api.Execution) int {
	n := len(e.Stdout) + len(e.Stderr) + len(result(e))
	for _, o := range e.Outputs {
		n += len(o.MIME) + len(o.Data)
	}
	return n
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
