package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// Baselines: the same work done without sandboxd, on the same host.

const pythonBin = "/usr/bin/python3"

// bwrapArgs run a command under bubblewrap with isolation comparable to a
// sandbox's: every namespace unshared, the system folders read-only, a
// private /proc, /dev and /tmp.
func bwrapArgs(cmd ...string) []string {
	return append([]string{"--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
		"--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--unshare-all",
		"--die-with-parent", "--new-session"}, cmd...)
}

// command times a command that must print want.
func command(ctx context.Context, n int, want string, name string, args ...string) (latency, error) {
	return times(ctx, n, func(ctx context.Context) error {
		out, err := exec.CommandContext(ctx, name, args...).Output()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if string(out) != want {
			return fmt.Errorf("%s printed %q", name, out)
		}
		return nil
	}, nil)
}

// pipeREPL times a round trip of x = 1 to a python3 on the host that
// reads code from a pipe, runs it in one namespace, and answers a line:
// a persistent interpreter with nothing between it and the caller.
func pipeREPL(ctx context.Context, n int) (latency, error) {
	cmd := exec.CommandContext(ctx, pythonBin, "-u", "-c",
		"import sys\nns = {}\nfor line in sys.stdin:\n    exec(line, ns)\n    sys.stdout.write('ok\\n')\n")
	in, err := cmd.StdinPipe()
	if err != nil {
		return latency{}, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return latency{}, err
	}
	if err := cmd.Start(); err != nil {
		return latency{}, err
	}
	defer func() { in.Close(); _ = cmd.Wait() }()
	out := bufio.NewReader(outPipe)
	return times(ctx, n, func(context.Context) error {
		if _, err := io.WriteString(in, "x = 1\n"); err != nil {
			return err
		}
		line, err := out.ReadString('\n')
		if err == nil && line != "ok\n" {
			err = fmt.Errorf("the REPL answered %q", line)
		}
		return err
	}, nil)
}

// sandboxd's paths.

// creates times session creates; each session is deleted off the clock,
// and the pool (if any) refilled before the next.
func creates(ctx context.Context, d *daemon, n int) (latency, error) {
	return createsThen(ctx, d, n, d.waitPool)
}

// createsThen times n creates; each session is deleted off the clock,
// then then runs (nil: the next create follows at once).
func createsThen(ctx context.Context, d *daemon, n int, then func(context.Context) error) (latency, error) {
	var id string
	return times(ctx, n, func(ctx context.Context) error {
		s, err := d.c.CreateSession(ctx, &api.CreateSessionRequest{})
		if err == nil {
			id = s.ID
		}
		return err
	}, func(ctx context.Context) error {
		if err := d.c.DeleteSession(ctx, id); err != nil || then == nil {
			return err
		}
		return then(ctx)
	})
}

// runs times one-shot runs of print(1), the pool (if any) refilled
// before the next.
func runs(ctx context.Context, d *daemon, n int) (latency, error) {
	return runsThen(ctx, d, n, d.waitPool)
}

// runsThen times n one-shot runs of print(1), then between each (nil:
// one right after the other).
func runsThen(ctx context.Context, d *daemon, n int, then func(context.Context) error) (latency, error) {
	req := &api.RunRequest{Language: api.LanguagePython, Code: "print(1)"}
	return times(ctx, n, func(ctx context.Context) error {
		e, err := d.c.Run(ctx, req, nil)
		if err == nil && (e.Status != api.StatusOK || e.Stdout != "1\n") {
			err = fmt.Errorf("run answered %s %q", e.Status, e.Stdout)
		}
		return err
	}, then)
}

// execs times x = 1 on one live session.
func execs(ctx context.Context, d *daemon, n int) (latency, error) {
	s, err := d.c.CreateSession(ctx, &api.CreateSessionRequest{})
	if err != nil {
		return latency{}, err
	}
	defer d.c.DeleteSession(context.WithoutCancel(ctx), s.ID)
	// The session came from the pool, which refills meanwhile: a warm
	// exec is measured on a quiet host, not beside a cold create (runsc's
	// takes the first ~200 executions' time on both cores).
	if err := d.waitPool(ctx); err != nil {
		return latency{}, err
	}
	req := &api.ExecRequest{Language: api.LanguagePython, Code: "x = 1"}
	// A few to warm up both ends.
	for i := 0; i < 20; i++ {
		if _, err := d.c.Exec(ctx, s.ID, req, nil); err != nil {
			return latency{}, err
		}
	}
	return times(ctx, n, func(ctx context.Context) error {
		e, err := d.c.Exec(ctx, s.ID, req, nil)
		if err == nil && e.Status != api.StatusOK {
			err = fmt.Errorf("exec answered %s", e.Status)
		}
		return err
	}, nil)
}

// cycle is what an agent's one-off tool call costs: a session created, one
// execution, the session deleted.
func cycle(d *daemon) func(context.Context) error {
	req := &api.ExecRequest{Language: api.LanguagePython, Code: "x = 1"}
	return func(ctx context.Context) error {
		s, err := d.c.CreateSession(ctx, &api.CreateSessionRequest{})
		if err != nil {
			return err
		}
		_, err = d.c.Exec(ctx, s.ID, req, nil)
		if derr := d.c.DeleteSession(context.WithoutCancel(ctx), s.ID); err == nil {
			err = derr
		}
		return err
	}
}

// memory is what idle sessions cost.
type memory struct {
	PSSPerSession  int64 // mean over a sample of sessions, bytes
	Sampled        int
	DaemonRSS      map[int]int64 // by idle sessions held
	CreateDuration map[int]time.Duration
}

// idleMemory creates sessions up to each of counts (4 at a time), lets
// them settle, and measures the daemon's RSS; the PSS of sessions' own
// processes is taken at the first count, over up to sample sessions.
func idleMemory(ctx context.Context, d *daemon, counts []int, sample int, req *api.CreateSessionRequest) (*memory, error) {
	m := &memory{DaemonRSS: map[int]int64{}, CreateDuration: map[int]time.Duration{}}
	var ids []string
	var mu sync.Mutex
	for _, target := range counts {
		start := time.Now()
		work := make(chan struct{})
		errs := make(chan error, 4)
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range work {
					s, err := d.c.CreateSession(ctx, req)
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					ids = append(ids, s.ID)
					mu.Unlock()
				}
			}()
		}
		for i := len(ids); i < target; i++ {
			select {
			case work <- struct{}{}:
			case err := <-errs:
				close(work)
				wg.Wait()
				return nil, fmt.Errorf("creating idle sessions: %w", err)
			}
		}
		close(work)
		wg.Wait()
		select {
		case err := <-errs:
			return nil, fmt.Errorf("creating idle sessions: %w", err)
		default:
		}
		m.CreateDuration[target] = time.Since(start)
		time.Sleep(3 * time.Second) // let the daemon's garbage collector run
		m.DaemonRSS[target] = d.rssBytes()
		if m.Sampled == 0 {
			for _, id := range ids[:min(sample, len(ids))] {
				m.PSSPerSession += pssBytes(id)
				m.Sampled++
			}
			m.PSSPerSession /= int64(m.Sampled)
		}
	}
	return m, nil
}

// pacedCreates times n pooled creates, one every interval (each session
// deleted right after, off the clock): a steady demand the pool can keep
// up with.
func pacedCreates(ctx context.Context, d *daemon, n int, interval time.Duration) (latency, error) {
	if err := d.waitPool(ctx); err != nil {
		return latency{}, err
	}
	next := time.Now()
	return createsThen(ctx, d, n, func(ctx context.Context) error {
		next = next.Add(interval)
		select {
		case <-time.After(time.Until(next)):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}

// bursts times size creates made at once, after the pool has been idle
// and full; the first burst (off the record) shows the pool the demand.
// The sessions are deleted after each burst.
func bursts(ctx context.Context, d *daemon, rounds, size int) (latency, error) {
	var all []time.Duration
	for round := 0; round <= rounds; round++ {
		if err := d.waitPool(ctx); err != nil {
			return latency{}, err
		}
		time.Sleep(2 * time.Second) // idle
		took := make([]time.Duration, size)
		ids := make([]string, size)
		errs := make([]error, size)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range size {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				t0 := time.Now()
				s, err := d.c.CreateSession(ctx, &api.CreateSessionRequest{})
				took[i], errs[i] = time.Since(t0), err
				if err == nil {
					ids[i] = s.ID
				}
			}()
		}
		close(start)
		wg.Wait()
		for i := range size {
			if errs[i] != nil {
				return latency{}, errs[i]
			}
			if err := d.c.DeleteSession(ctx, ids[i]); err != nil {
				return latency{}, err
			}
		}
		if round > 0 {
			all = append(all, took...)
		}
	}
	return percentiles(all), nil
}

// backToBack times n creates one right after the other, each session
// deleted at once (off the clock) and the pool never waited for.
func backToBack(ctx context.Context, d *daemon, n int) (latency, error) {
	if err := d.waitPool(ctx); err != nil {
		return latency{}, err
	}
	return createsThen(ctx, d, n, nil)
}

// runsInRow times n one-shot runs of print(1), one right after the other.
func runsInRow(ctx context.Context, d *daemon, n int) (latency, error) {
	if err := d.waitPool(ctx); err != nil {
		return latency{}, err
	}
	return runsThen(ctx, d, n, nil)
}

// lists times GET /v1/sessions.
func lists(ctx context.Context, d *daemon, n, want int) (latency, error) {
	return times(ctx, n, func(ctx context.Context) error {
		l, err := d.c.ListSessions(ctx, nil)
		if err == nil && len(l) < want {
			err = fmt.Errorf("listed %d sessions of %d", len(l), want)
		}
		return err
	}, nil)
}
