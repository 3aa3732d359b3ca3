package agent

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite generated files (supervisor/consts.h)")

// TestSupervisorHeader fails when supervisor/consts.h is not what
// SupervisorHeader makes of today's constants (go test -run
// TestSupervisorHeader -update writes it).
func TestSupervisorHeader(t *testing.T) {
	path := filepath.Join("supervisor", "consts.h")
	if *update {
		if err := os.WriteFile(path, []byte(SupervisorHeader()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != SupervisorHeader() {
		t.Fatalf("%s is not SupervisorHeader()'s (%v): go test ./isolation/agent -run TestSupervisorHeader -update", path, err)
	}
}

// TestMain removes the native supervisor bothSupervisors built.
func TestMain(m *testing.M) {
	code := m.Run()
	if sharedSupervisor.dir != "" {
		os.RemoveAll(sharedSupervisor.dir)
	}
	os.Exit(code)
}

// sharedSupervisor is the native supervisor bothSupervisors runs, built
// once (with the sanitizers: see TestSupervisorAnswersAsPython).
var sharedSupervisor struct {
	once      sync.Once
	dir, path string
	err       error
}

// bothSupervisors runs f as two subtests at once: with the Python
// supervisor (sup "") and with the native one (sup its path). They take
// one of -parallel's places together (as TestAgentContract's agents do):
// each mostly waits, for its cells' timeouts, graces and sleeps.
func bothSupervisors(t *testing.T, f func(t *testing.T, sup string)) {
	t.Parallel()
	native := testSupervisor(t)
	var wg sync.WaitGroup
	wg.Go(func() { t.Run("python", func(t *testing.T) { f(t, "") }) })
	wg.Go(func() { t.Run("native", func(t *testing.T) { f(t, native) }) })
	wg.Wait()
}

// testSupervisor is the native supervisor the package's tests run, built
// once, with the sanitizers.
func testSupervisor(t testing.TB) string {
	t.Helper()
	s := &sharedSupervisor
	s.once.Do(func() {
		if s.dir, s.err = os.MkdirTemp("", "sandboxd-supervisor-"); s.err != nil {
			return
		}
		s.path = filepath.Join(s.dir, "sandboxd-supervisor")
		s.err = compileSupervisor(s.path, sanitized...)
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.path
}

// sanitized are the flags of a native supervisor built for tests: the
// address and undefined behaviour sanitizers end it at the first bad
// access.
var sanitized = []string{"-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"}

// buildSupervisor compiles the native supervisor (as the Makefile does)
// into a scratch folder and returns its path.
func buildSupervisor(t testing.TB) string {
	t.Helper()
	return buildSupervisorWith(t)
}

// buildSupervisorWith is buildSupervisor with those flags.
func buildSupervisorWith(t testing.TB, flags ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "sandboxd-supervisor")
	if err := compileSupervisor(out, flags...); err != nil {
		t.Fatal(err)
	}
	return out
}

// compileSupervisor compiles the native supervisor to out with flags.
func compileSupervisor(out string, flags ...string) error {
	if b, err := exec.Command(filepath.Join("supervisor", "build.sh"), append([]string{out}, flags...)...).CombinedOutput(); err != nil {
		return fmt.Errorf("supervisor/build.sh: %v\n%s", err, b)
	}
	return nil
}

// TestSupervisorContract runs the contract's checks that the native
// supervisor answers already (ping, Python and shell executions,
// interrupts, reclaims, a reconnect) against it, with today's Conn and
// worker, and its refusal of kill(-1) where it is not PID 1.
func TestSupervisorContract(t *testing.T) {
	t.Parallel()
	bin := testSupervisor(t)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		t.Run("contract", func(t *testing.T) {
			ra := startAgentOn(t, Files(), false, bin)
			// Its argv[0]: its /proc/PID/exe is closed to the same uid
			// (it is not dumpable).
			cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", ra.pong.PID))
			if argv0, _, _ := strings.Cut(string(cmdline), "\x00"); err != nil || argv0 != bin {
				t.Fatalf("the agent that answered is %q (%v), not %s", argv0, err, bin)
			}
			testContract(t, ProtocolVersion, ra)
		})
	})
	wg.Go(func() {
		t.Run("kill-all", func(t *testing.T) {
			testKillAllNeedsPID1(t, startAgentOn(t, Files(), true, bin))
		})
	})
}

// TestSupervisorAnswersAsPython runs the same executions through the Python
// supervisor and the native one (built with the address and undefined
// behaviour sanitizers, which end it at the first bad access) and wants
// the same answers: output that is not UTF-8, cut by max_output and by the
// answer's bound, a result cut inside a character, an exception with a
// lone surrogate or a long name, displays, an interpreter that exits or is
// killed, shell commands.
func TestSupervisorAnswersAsPython(t *testing.T) {
	t.Parallel()
	bin := testSupervisor(t)
	py := startAgent(t, Files(), false)
	native := startAgentOn(t, Files(), false, bin)
	cells := []Request{
		{Code: "import sys\nsys.stdout.buffer.write(b'a\\xffb\\xe2\\x82'); sys.stdout.flush()\n" +
			"sys.stdout.buffer.write(b'\\xacc\\xf0\\x9f\\x98'); sys.stdout.flush()\nsys.stdout.buffer.write(b'\\xed\\xa0\\x80\\xc0\\xaf\\xf4\\x90'); sys.stdout.flush()"},
		{Code: "print('x' * 5000)\nprint('e' * 10, file=__import__('sys').stderr)", MaxOutput: 1000},
		// Characters cut by the pipe's reads (64 KiB) and by max_output.
		{Code: "import sys\nsys.stdout.buffer.write(b'a' * 65535 + '\\u20ac\\U0001f600'.encode() * 40000); sys.stdout.flush()"},
		{Code: "print('\\u20ac' * 100)", MaxOutput: 100},
		{Code: "print('y' * 3000)\n'z' * 3000", MaxAnswer: 4000},
		{Code: "'\\u00e9' * 100", MaxAnswer: 51},
		{Code: "raise ValueError('\\ud800 lone')"},
		{Code: "E = type('N' * 300, (Exception,), {})\nraise E('long name')"},
		{Code: "class H:\n    def _repr_html_(self): return '<b>h</b>'\n    def __repr__(self): return 'H'\nprint('a', flush=True)\ndisplay(H())\nprint('b')\nH()"},
		{Code: "display(*[{'k': 'v' * 100}] * 5)", MaxAnswer: 300},
		{Code: "x = 5"},
		{Code: "x * 2"},
		{Code: "import os\nos._exit(3)"},
		{Code: "x"},
		{Code: "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"},
		// The new interpreter up first (the native supervisor's starts
		// afresh, the Python one's forks): a timeout of 0.5 s must find
		// the cell running, on a loaded host too.
		{Code: "pass", Timeout: 60},
		{Code: "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(30)", Timeout: 0.5, Grace: 0.3},
		{Code: "1 +"},
		{Language: LanguageShell, Code: "printf 'ok\\377\\n'; echo $SBX >&2; exit 7", Env: map[string]string{"SBX": "env"}},
		{Language: LanguageShell, Code: "kill -9 $$"},
		{Language: LanguageShell, Code: "pwd", Cwd: "/nonexistent"},
		{Language: LanguageShell, Code: "sleep 30", Timeout: 0.3},
		{Language: LanguageShell, Code: "head -c 3000 /dev/zero | tr '\\0' q", MaxAnswer: 1000},
	}
	for i, req := range cells {
		if req.Language == "" {
			req.Language = LanguagePython
		}
		// Both at once: the cells' timeouts and graces are most of the
		// test's time.
		var want, got *Message
		var wantOut, wantErr, gotOut, gotErr string
		var errs [2]error
		var wg sync.WaitGroup
		wg.Go(func() { want, wantOut, wantErr, errs[0] = py.tryExec(req) })
		wg.Go(func() { got, gotOut, gotErr, errs[1] = native.tryExec(req) })
		wg.Wait()
		if err := errors.Join(errs[:]...); err != nil {
			t.Fatalf("cell %d %q: %v", i, req.Code, err)
		}
		want.DurationMS, got.DurationMS = 0, 0
		w, _ := json.Marshal(want)
		g, _ := json.Marshal(got)
		if string(w) != string(g) || wantOut != gotOut || wantErr != gotErr {
			t.Errorf("cell %d %q:\npython: %s %q %q\nnative: %s %q %q", i, req.Code, w, wantOut, wantErr, g, gotOut, gotErr)
		}
	}
}

// TestCheckSupervisor: the daemon takes a native supervisor of this build
// only.
func TestCheckSupervisor(t *testing.T) {
	t.Parallel()
	if err := CheckSupervisor(context.Background(), testSupervisor(t)); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), SupervisorBinary)
	if err := os.WriteFile(other, []byte("#!/bin/sh\necho 'sandboxd-supervisor 1'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := CheckSupervisor(context.Background(), other); err == nil || !strings.Contains(err.Error(), "another build's") {
		t.Fatalf("another build's supervisor: %v", err)
	}
	if err := CheckSupervisor(context.Background(), filepath.Join(t.TempDir(), "none")); err == nil {
		t.Fatal("a missing supervisor passed")
	}
}

// TestShellLeavesABackgroundProcess: a command that ends, writes nothing
// and leaves a process holding its output (`sleep 60 &`) answers once it
// ends, not at its timeout: neither output nor an end of file wakes the
// supervisor, only SIGCHLD, which the native supervisor's spawner thread
// may take first.
func TestShellLeavesABackgroundProcess(t *testing.T) {
	bothSupervisors(t, testShellLeavesABackgroundProcess)
}

func testShellLeavesABackgroundProcess(t *testing.T, sup string) {
	ra := startAgentOn(t, Files(), false, sup)
	for i := range 8 {
		start := time.Now()
		m, stdout, _ := ra.exec(t, Request{Language: LanguageShell, Code: "echo hi >/dev/null; sleep 60 &", Timeout: 20})
		if took := time.Since(start); m.Status != StatusOK || stdout != "" || took > 10*time.Second {
			t.Fatalf("run %d: %+v %q after %v", i, m, stdout, took)
		}
	}
}

func TestPythonOf(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{SupervisorArgs("/usr/bin/python3", ""), "/usr/bin/python3"},
		{SupervisorArgs("/usr/local/bin/python3", "import numpy"), "/usr/local/bin/python3"},
		{[]string{"/usr/bin/python3", "-S", "-c", Bootstrap}, "/usr/bin/python3"},
		{nil, ""},
	} {
		if got := PythonOf(tc.args); got != tc.want {
			t.Errorf("PythonOf(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}
