package integration

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestE2BSDK runs E2B's official SDKs (integration/e2b: e2b and
// @e2b/code-interpreter, pinned) against `sandboxctl e2b serve` over a
// daemon of this tree, changing nothing but their environment. The
// packages are installed from the lock file into a copy, with npm's cache
// in the test's folder.
func TestE2BSDK(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the SDKs' tests are not in the VM: this runs on the host")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not installed: make node-deps (Debian's nodejs and npm)")
	}
	e := startE2B(t, "")
	work := t.TempDir()
	tree := filepath.Join(work, "e2b")
	copySDK(t, "e2b", tree)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	nodeTool(ctx, t, tree, nil, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--cache", filepath.Join(work, "npm-cache"))
	tests, _ := filepath.Glob(filepath.Join(tree, "*.test.mjs"))
	if len(tests) == 0 {
		t.Fatal("no integration/e2b/*.test.mjs")
	}
	out := nodeTool(ctx, t, tree, e.env(),
		"node", append([]string{"--test", "--test-reporter=tap", "--test-concurrency=2"}, tests...)...)
	counts := tapCounts(out)
	if counts["skipped"] != 0 || counts["todo"] != 0 || testing.Verbose() {
		t.Log(out)
	}
	if counts["pass"] == 0 {
		t.Error("no test of the SDKs passed")
	}
	t.Logf("the E2B SDKs' tests: %s", summary(out))
	e.noSessions(t, "the E2B tests")
}

// e2bEnv is a daemon of this tree with `sandboxctl e2b serve` over it and
// two of its keys: what the SDKs' tests, the hostile-input test and the
// benchmarks talk to.
type e2bEnv struct {
	d *daemon
	// url is the gateway's (http://127.0.0.1:port); addr its host:port.
	url, addr string
	// key and other are two keys: other's holder must see nothing of key's.
	key, other string
	// log is the gateway's log file.
	log string
}

// startE2B starts a daemon with config, makes two keys and serves the
// gateway; the test's cleanup stops both.
func startE2B(t testing.TB, config string) *e2bEnv {
	t.Helper()
	d := startDaemon(t, config)
	state := filepath.Join(t.TempDir(), "state")
	ctl := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(filepath.Join(bin, "sandboxctl"), append([]string{"--socket", d.socket, "e2b", "--state-dir", state}, args...)...).Output()
		if err != nil {
			t.Fatalf("sandboxctl e2b %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	e := &e2bEnv{d: d, key: ctl("key", "create", "--name", "a"), other: ctl("key", "create", "--name", "b")}
	e.addr, e.log = serveE2B(t, d, state)
	e.url = "http://" + e.addr
	return e
}

// env points E2B's SDKs at the gateway.
func (e *e2bEnv) env() []string {
	return []string{"E2B_API_URL=" + e.url, "E2B_SANDBOX_URL=" + e.url, "E2B_API_KEY=" + e.key, "E2B_OTHER_KEY=" + e.other}
}

// noSessions fails t for each session the daemon still has.
func (e *e2bEnv) noSessions(t testing.TB, by string) {
	t.Helper()
	list, err := e.d.c.ListSessions(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		t.Errorf("session %s (%s, labels %v) left by %s", s.ID, s.Status, s.Labels, by)
	}
}

// serveAddr is the address in the gateway's start line.
var serveAddr = regexp.MustCompile(`E2B gateway serving" listen=(\S+)`)

// serveE2B starts `sandboxctl e2b serve` on a free loopback port for d and
// returns its address and log file; the test's cleanup stops it.
func serveE2B(t testing.TB, d *daemon, state string) (string, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "sandboxctl"), "--socket", d.socket, "e2b", "--state-dir", state, "serve", "--listen", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "gateway.log")
	addr := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f, _ := os.Create(logPath)
		defer f.Close()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			f.WriteString(sc.Text() + "\n")
			if m := serveAddr.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		<-done
		if err := cmd.Wait(); err != nil {
			t.Errorf("the gateway ended with %v", err)
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("the gateway's log:\n%s", b)
		}
	})
	select {
	case a := <-addr:
		return a, logPath
	case <-done:
		b, _ := os.ReadFile(logPath)
		t.Fatalf("the gateway ended at start:\n%s", b)
	case <-time.After(20 * time.Second):
		t.Fatal("the gateway did not start within 20 s")
	}
	return "", ""
}
