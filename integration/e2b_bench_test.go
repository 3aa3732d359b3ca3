package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// BenchmarkE2B times E2B's SDK (integration/e2b/bench.mjs) through
// `sandboxctl e2b serve`, each operation next to sandboxd's own API doing
// the same on the same daemon in the same run: a create from a warm pool,
// runCode('1+1'), commands.run('true'); and the daemon's GetSession, which
// the gateway calls once a sandbox request. The SDK's times are taken in
// node, around the SDK's call alone.
func BenchmarkE2B(b *testing.B) {
	if _, err := exec.LookPath("node"); err != nil {
		b.Skip("node is not installed: make node-deps")
	}
	e := startE2B(b, "pool_size = 2\n")
	sdk := startE2BBench(b, e)
	ctx := context.Background()

	b.Run("CreatePooled/e2b-sdk", func(b *testing.B) {
		e.d.waitPool(b)
		sdk.measure(b, "create", func() { e.d.waitPool(b) })
	})
	b.Run("CreatePooled/sandboxd", func(b *testing.B) {
		benchCreate(b, e.d, &api.CreateSessionRequest{})
	})

	sdk.call(b, "setup")
	b.Cleanup(func() { sdk.call(b, "close") })
	id := e.d.session(b, nil)
	b.Run("RunCode/e2b-sdk", func(b *testing.B) { sdk.measure(b, "runCode", nil) })
	b.Run("RunCode/sandboxd", func(b *testing.B) {
		measure(b, func() error {
			x, err := e.d.c.Exec(ctx, id, &api.ExecRequest{Language: "python", Code: "1+1"}, nil)
			if err == nil && (x.Error != nil || x.Result == nil || *x.Result != "2") {
				err = fmt.Errorf("1+1: %+v", x)
			}
			return err
		}, nil)
	})
	b.Run("CommandTrue/e2b-sdk", func(b *testing.B) { sdk.measure(b, "run", nil) })
	b.Run("CommandTrue/e2b-raw", func(b *testing.B) { sdk.measure(b, "rawRun", nil) })
	// The gateway without node: Go sends the SDK's Connect call.
	b.Run("CommandTrue/gateway-go", func(b *testing.B) {
		sbx := e2bCreate(b, e)
		start := []byte(`{"process":{"cmd":"/bin/bash","args":["-l","-c","true"],"envs":{}},"stdin":false}`)
		msg := append(binary.BigEndian.AppendUint32([]byte{0}, uint32(len(start))), start...)
		measure(b, func() error {
			req, _ := http.NewRequestWithContext(ctx, "POST", e.url+"/process.Process/Start", bytes.NewReader(msg))
			for k, v := range map[string]string{"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1",
				"E2b-Sandbox-Id": sbx.SandboxID, "E2b-Sandbox-Port": "49983", "X-Access-Token": sbx.EnvdAccessToken, "Connect-Timeout-Ms": "60000"} {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err == nil && !bytes.Contains(body, []byte(`"exitCode"`)) && !bytes.Contains(body, []byte(`"exited":true`)) {
				err = fmt.Errorf("Start: %d %s", resp.StatusCode, body)
			}
			return err
		}, nil)
	})
	// What the gateway does for commands.run: an attached process, its
	// output followed to its end.
	b.Run("CommandTrue/sandboxd-process", func(b *testing.B) {
		measure(b, func() error {
			p, err := e.d.c.StartProcess(ctx, id, &api.ProcessRequest{Argv: []string{"/bin/bash", "-l", "-c", "true"}, Stdin: true, Cwd: "/workspace"})
			if err != nil {
				return err
			}
			// Input closed, as the gateway closes it; a command already
			// ended has none (conflict).
			if err := e.d.c.WriteStdin(ctx, id, p.PID, nil, true); err != nil && !errdefs.IsConflict(err) {
				return err
			}
			var code *int
			err = e.d.c.ProcessOutput(ctx, id, p.PID, "start", true, nil, func(o api.ProcessOutput) error {
				code = o.ExitCode
				return nil
			})
			if err == nil && (code == nil || *code != 0) {
				err = fmt.Errorf("true ended with %v", code)
			}
			return err
		}, nil)
	})
	b.Run("CommandTrue/sandboxd-exec", func(b *testing.B) {
		measure(b, func() error {
			_, err := e.d.c.Exec(ctx, id, &api.ExecRequest{Language: "shell", Code: "true"}, nil)
			return err
		}, nil)
	})
	// The same process without bash's login start (E2B's SDK asks for
	// `bash -l -c`): how much of a command is /etc/profile.
	b.Run("CommandTrue/sandboxd-process-nologin", func(b *testing.B) {
		measure(b, func() error {
			p, err := e.d.c.StartProcess(ctx, id, &api.ProcessRequest{Argv: []string{"/bin/bash", "-c", "true"}, Stdin: true, Cwd: "/workspace"})
			if err != nil {
				return err
			}
			// Input closed, as the gateway closes it; a command already
			// ended has none (conflict).
			if err := e.d.c.WriteStdin(ctx, id, p.PID, nil, true); err != nil && !errdefs.IsConflict(err) {
				return err
			}
			return e.d.c.ProcessOutput(ctx, id, p.PID, "start", true, nil, func(api.ProcessOutput) error { return nil })
		}, nil)
	})
	b.Run("GetSession/sandboxd", func(b *testing.B) {
		measure(b, func() error {
			_, err := e.d.c.GetSession(ctx, id)
			return err
		}, nil)
	})
}

// e2bCreate makes a sandbox through e's gateway with its key; the
// benchmark's cleanup kills it.
func e2bCreate(b *testing.B, e *e2bEnv) (sbx struct{ SandboxID, EnvdAccessToken string }) {
	b.Helper()
	req, _ := http.NewRequest("POST", e.url+"/sandboxes", strings.NewReader(`{"templateID":"base","timeout":3600}`))
	req.Header.Set("X-API-KEY", e.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&sbx); err != nil || resp.StatusCode != http.StatusCreated {
		b.Fatalf("create: %d %v", resp.StatusCode, err)
	}
	b.Cleanup(func() { _ = e.d.c.DeleteSession(context.Background(), sbx.SandboxID) })
	return sbx
}

// e2bBench is bench.mjs running against a gateway.
type e2bBench struct {
	in  io.Writer
	out *bufio.Scanner
}

// startE2BBench installs the pinned SDKs into a copy of integration/e2b
// and starts bench.mjs on e's gateway; the benchmark's cleanup ends it.
func startE2BBench(b *testing.B, e *e2bEnv) *e2bBench {
	b.Helper()
	tree := b.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "bench.mjs"} {
		data, err := os.ReadFile(filepath.Join("e2b", f))
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tree, f), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	npm := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--cache", filepath.Join(b.TempDir(), "npm-cache"))
	npm.Dir = tree
	if out, err := npm.CombinedOutput(); err != nil {
		b.Fatalf("npm ci: %v\n%s", err, out)
	}
	cmd := exec.Command("node", "bench.mjs")
	cmd.Dir = tree
	cmd.Env = append(os.Environ(), e.env()...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		in.Close()
		_ = cmd.Wait()
	})
	return &e2bBench{in: in, out: bufio.NewScanner(out)}
}

// call runs op in node and returns the time it took there.
func (s *e2bBench) call(b testing.TB, op string) time.Duration {
	b.Helper()
	if _, err := io.WriteString(s.in, op+"\n"); err != nil {
		b.Fatalf("bench.mjs %s: %v", op, err)
	}
	if !s.out.Scan() {
		b.Fatalf("bench.mjs %s: it ended (%v)", op, errors.Join(s.out.Err(), io.ErrUnexpectedEOF))
	}
	line := s.out.Text()
	ms, err := strconv.ParseFloat(line, 64)
	if err != nil {
		b.Fatalf("bench.mjs %s: %s", op, strings.TrimPrefix(line, "error "))
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// measure runs op b.N times in node, with between (on the Go side) after
// each, and reports node's times: ns/op is their mean, not the loop's.
func (s *e2bBench) measure(b *testing.B, op string, between func()) {
	b.Helper()
	times := make([]time.Duration, 0, b.N)
	var sum time.Duration
	for i := 0; i < b.N; i++ {
		d := s.call(b, op)
		times = append(times, d)
		sum += d
		if between != nil {
			between()
		}
	}
	report(b, times)
	b.ReportMetric(float64(sum.Nanoseconds())/float64(b.N), "ns/op")
}
