package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// heavyCell touches 96 MiB and spins the CPU for about 0.4 s.
const heavyCell = `import time
b = bytearray(96 << 20)
for i in range(0, len(b), 4096):
    b[i] = 1
t = time.process_time()
while time.process_time() - t < 0.4:
    pass
del b`

// tickCell prints a tick a second, three times.
const tickCell = `import time
for i in range(3):
    print("tick", i, flush=True)
    time.sleep(1)`

// TestExecutions: every execution has metrics (CPU time and memory peak
// of the session's cgroup while it ran); wait false answers 202 with the
// id at once, GET …/executions/{eid} shows it running with its output so
// far, then whole; the list is summaries (code hash, caller, exit code,
// metrics; no output); sandboxctl exec --no-wait, logs [-f] and history
// --format drive them.
func TestExecutions(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		d := startDaemon(t, cfg)
		ctx := context.Background()
		id := d.session(t, &api.CreateSessionRequest{MemoryMB: ptr(int64(512))})

		heavy := d.py(t, id, heavyCell)
		m := heavy.Metrics
		if heavy.Status != api.StatusOK || m == nil || m.CPUMS < 300 || m.MemoryPeakBytes < 96<<20 || m.WallMS != heavy.DurationMS {
			t.Fatalf("the heavy cell's metrics: %+v (%s)", m, heavy.Stderr)
		}
		if light := d.py(t, id, "x = 1"); light.Metrics == nil || light.Metrics.CPUMS >= m.CPUMS {
			t.Errorf("a light cell's metrics: %+v", light.Metrics)
		}

		// wait false, through the API as a client speaks it.
		body, _ := json.Marshal(map[string]any{"language": "python", "code": tickCell, "wait": false})
		start := time.Now()
		status, answer := d.raw(t, "POST", "/v1/sessions/"+id+"/exec", string(body))
		var started api.ExecStarted
		err := json.Unmarshal(answer, &started)
		if status != http.StatusAccepted || err != nil || started.ID == "" || time.Since(start) > 2*time.Second {
			t.Fatalf("wait false: %d %s %v after %v", status, answer, err, time.Since(start))
		}
		eid := started.ID
		var e *api.Execution
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if e, err = d.c.Execution(ctx, id, eid); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(e.Stdout, "tick 0") || time.Now().After(deadline) {
				break
			}
		}
		if e.Status != api.StatusRunning || !strings.Contains(e.Stdout, "tick 0") || strings.Contains(e.Stdout, "tick 2") {
			t.Fatalf("running: %+v", e)
		}
		list, err := d.c.Executions(ctx, id, 0)
		if err != nil || len(list) != 3 || list[0].ID != eid || list[0].Status != api.StatusRunning || list[0].ExitCode != nil {
			t.Fatalf("the list while it runs: %+v %v", list, err)
		}
		// An exec meanwhile waits its turn.
		if after := d.py(t, id, "print('after')"); after.Stdout != "after\n" {
			t.Fatalf("the next execution: %+v", after)
		}
		if e, err = d.c.Execution(ctx, id, eid); err != nil || e.Status != api.StatusOK || e.Stdout != "tick 0\ntick 1\ntick 2\n" || e.Metrics == nil {
			t.Fatalf("ended: %+v %v", e, err)
		}
		list, err = d.c.Executions(ctx, id, 0)
		sum := sha256.Sum256([]byte(tickCell))
		if err != nil || len(list) != 4 || list[1].ID != eid || list[1].ExitCode == nil || *list[1].ExitCode != 0 ||
			list[1].CodeSHA256 != hex.EncodeToString(sum[:]) || list[1].CallerUID == nil || *list[1].CallerUID != 0 || list[1].Metrics == nil {
			t.Fatalf("the list after: %+v %v", list, err)
		}
		if _, err := d.c.Execution(ctx, id, "0000000000000000"); err == nil || !strings.Contains(err.Error(), "no execution") {
			t.Errorf("an unknown execution: %v", err)
		}

		// The CLI.
		out, stderr, code := d.ctl(t, "", "exec", "--no-wait", id, "--", "sh", "-c", "echo one; sleep 1; echo two >&2; exit 3")
		eid = strings.TrimSpace(out)
		if code != 0 || len(eid) != 16 {
			t.Fatalf("exec --no-wait: %d %q %q", code, out, stderr)
		}
		if out, stderr, code = d.ctl(t, "", "logs", "-f", id, eid); code != 0 || out != "one\n" || stderr != "two\n" {
			t.Fatalf("logs -f: %d %q %q", code, out, stderr)
		}
		if out, _, code = d.ctl(t, "", "history", id, "--format", "{{.ID}} {{.Status}} {{.ExitCode}}"); code != 0 || !strings.HasPrefix(out, eid+" error 3\n") {
			t.Fatalf("history --format: %d %q", code, out)
		}
		if out, _, code = d.ctl(t, "", "logs", "-n", "2", id); code != 0 || !strings.Contains(out, "==> "+eid+" (shell, error) <==\none\n") || !strings.Contains(out, "after\n") {
			t.Fatalf("logs: %d %q", code, out)
		}
	})
}
