package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
)

// TestAgentSurvivesHostileCode runs, in one session, cells that attack the
// in-sandbox agent from the interpreter it runs them in. After each, the
// next execution must answer correctly, in step (its own output, not an
// earlier cell's), keeping the interpreter's state unless the attack cost it
// (then state_reset says so).
func TestAgentSurvivesHostileCode(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "")
	id := d.session(t, nil)
	attacks := []struct {
		name string
		code string
		// reset is whether the interpreter may be lost.
		reset bool
	}{
		{"forges a reply on the control pipe", "import os\nos.write(711, b'{\"result\": \"forged\", \"seq\": 1, \"token\": \"x\"}\\n')\nprint('after')", false},
		{"writes garbage to the control pipe", "import os\nos.write(711, b'\\x00\\xff not json\\n' * 1000)\nprint('after')", false},
		{"writes a huge line to the control pipe", "import os, threading\nthreading.Thread(target=lambda: os.write(711, b'x' * (1 << 20)), daemon=True).start()", true},
		{"reads the request pipe", "import os\nos.set_blocking(710, False)\ntry:\n    os.read(710, 1 << 16)\nexcept OSError:\n    pass", false},
		{"a forked child returns to the agent loop", "import os\nos.fork()\nprint('forked')", false},
		{"forks and the worker exits", "import os, time\nif os.fork():\n    os._exit(0)\ntime.sleep(0.2)", true},
		{"closes the control pipes", "import os\nos.close(710)\nos.close(711)", true},
		{"closes stdout and stderr", "import os\nos.close(1)\nos.close(2)", false},
		{"replaces sys.stdout", "import sys, io\nsys.stdout = io.StringIO()\nsys.stderr.close()", false},
		{"ignores SIGINT and spins past the timeout", "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass", true},
		{"sets a SIGINT handler that swallows the interrupt", "import signal\nsignal.signal(signal.SIGINT, lambda *a: None)", false},
		{"kills its parent", "import os, signal\nfor s in (signal.SIGKILL, signal.SIGTERM, signal.SIGSTOP):\n    try:\n        os.kill(os.getppid(), s)\n    except OSError:\n        pass", false},
		{"kills its own process group", "import os, signal\nos.killpg(0, signal.SIGKILL)", true},
		{"exits the interpreter", "import os\nos._exit(3)", true},
		{"floods memory", "x = []\nwhile True: x.append(bytearray(64 << 20))", true},
		{"leaves a background writer on the pipes", "import os, threading, time\ndef spam():\n    while True:\n        try:\n            os.write(711, b'{\"seq\": 99}\\n')\n        except OSError:\n            return\n        time.sleep(0.001)\nthreading.Thread(target=spam, daemon=True).start()", false},
	}
	for i, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			d.py(t, id, "canary = 'alive'")
			e := d.exec(t, id, "python", a.code, 2)
			t.Logf("attack: %s", describe(e))
			want := fmt.Sprintf("cell-after-%d", i)
			next := d.py(t, id, fmt.Sprintf("print(%q)\nprint(globals().get('canary', 'lost'))", want))
			// Output of processes the attack left running may show up
			// too; the cell's own two lines must be there, in order.
			// A late line of theirs may fall between the two.
			_, own, found := strings.Cut(next.Stdout, want+"\n")
			canary := "missing"
			for _, line := range strings.Split(own, "\n") {
				if line == "alive" || line == "lost" {
					canary = line
					break
				}
			}
			if next.Status != "ok" || !found {
				t.Fatalf("the next execution is out of step: %s", describe(next))
			}
			if canary != "alive" && !a.reset {
				t.Fatalf("the interpreter's state was lost: %s", describe(next))
			}
			if canary != "alive" && !e.StateReset && !next.StateReset {
				t.Fatalf("state was lost without state_reset: attack %s, next %s", describe(e), describe(next))
			}
		})
	}
	// The last attack left a SIGINT handler that swallows interrupts: each
	// cell starts with the agent's own, so a timeout still interrupts cleanly.
	d.py(t, id, "import signal\nsignal.signal(signal.SIGINT, lambda *a: None)")
	e := d.exec(t, id, "python", "while True: pass", 1)
	if e.Status != "timeout" || e.StateReset {
		t.Fatalf("a timeout must interrupt, keeping the state: %s", describe(e))
	}
}

// describe is an execution in one line, for failure messages.
func describe(e *api.Execution) string {
	return fmt.Sprintf("status=%s exit=%d state_reset=%v stdout=%q stderr=%q result=%s error=%+v",
		e.Status, e.ExitCode, e.StateReset, e.Stdout, e.Stderr, result(e), e.Error)
}

// TestManyExecutionsKeepTheSandbox runs 400 executions back to back in one
// session on each runtime: every one answers, and the interpreter is the
// one the first made. The native supervisor draws its executions' tokens
// from the kernel 64 at a time, and gVisor's getrandom returned part of a
// refill (944 bytes of 1024) at the third: its abort lost the sandbox at
// the 192nd execution, every time, until it asked again for the rest.
func TestManyExecutionsKeepTheSandbox(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt, cfg string) {
		t.Parallel()
		d := startDaemon(t, cfg)
		id := d.session(t, nil)
		d.py(t, id, "kept = 'state'")
		for i := range 400 {
			if e := d.py(t, id, "x = 1"); e.Status != api.StatusOK {
				t.Fatalf("execution %d: %s", i+1, describe(e))
			}
		}
		if e := d.py(t, id, "kept"); e.Result == nil || *e.Result != "'state'" {
			t.Fatalf("the session's state after 400 executions: %s", describe(e))
		}
	})
}
