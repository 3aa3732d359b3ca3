package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

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

// idlePython is the mean PSS of n idle python3 processes started as a
// session's worker is, with site (the host's site-packages and .pth
// files), run side by side so that their shared pages are split as a
// thousand sessions split them: the floor of a session that holds one
// interpreter.
func idlePython(ctx context.Context, n int) (int64, error) {
	var cmds []*exec.Cmd
	defer func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}()
	for range n {
		c := exec.CommandContext(ctx, pythonBin, "-c", "import sys; print(1, flush=True); sys.stdin.read()")
		in, err := c.StdinPipe()
		if err != nil {
			return 0, err
		}
		defer in.Close()
		out, err := c.StdoutPipe()
		if err != nil {
			return 0, err
		}
		if err := c.Start(); err != nil {
			return 0, err
		}
		cmds = append(cmds, c)
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
			return 0, fmt.Errorf("an idle python3 did not start: %w", err)
		}
	}
	var total int64
	for _, c := range cmds {
		total += pssOf(strconv.Itoa(c.Process.Pid))
	}
	return total / int64(n), nil
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

// liveSession creates a session and waits for the pool to refill: the
// session came from the pool, and what is timed on it is measured on a
// quiet host, not beside a cold create (runsc's takes the first ~200
// executions' time on both cores). done deletes it.
func (d *daemon) liveSession(ctx context.Context) (*api.Session, func(), error) {
	s, err := d.c.CreateSession(ctx, &api.CreateSessionRequest{})
	if err != nil {
		return nil, nil, err
	}
	done := func() { _ = d.c.DeleteSession(context.WithoutCancel(ctx), s.ID) }
	if err := d.waitPool(ctx); err != nil {
		done()
		return nil, nil, err
	}
	return s, done, nil
}

// execs times x = 1 on one live session.
func execs(ctx context.Context, d *daemon, n int) (latency, error) {
	s, done, err := d.liveSession(ctx)
	if err != nil {
		return latency{}, err
	}
	defer done()
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
	ids := make([]string, size)
	return burstRounds(ctx, rounds, size, d.idleFull, func(ctx context.Context, i int) error {
		s, err := d.c.CreateSession(ctx, &api.CreateSessionRequest{})
		if err == nil {
			ids[i] = s.ID
		}
		return err
	}, func(ctx context.Context) error {
		for _, id := range ids {
			if err := d.c.DeleteSession(ctx, id); err != nil {
				return err
			}
		}
		return nil
	})
}

// getBursts times size GETs of one live session made at once after 2 s
// idle, as bursts makes its creates: the HTTP floor under a burst on
// this host (size requests, their connections and JSON on its cores).
func getBursts(ctx context.Context, d *daemon, rounds, size int) (latency, error) {
	s, done, err := d.liveSession(ctx)
	if err != nil {
		return latency{}, err
	}
	defer done()
	return burstRounds(ctx, rounds, size, d.idleFull, func(ctx context.Context, _ int) error {
		_, err := d.c.GetSession(ctx, s.ID)
		return err
	}, nil)
}

// idleFull waits for the pool to be full, then 2 s more with nothing
// asked of the daemon.
func (d *daemon) idleFull(ctx context.Context) error {
	if err := d.waitPool(ctx); err != nil {
		return err
	}
	select {
	case <-time.After(2 * time.Second):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// burstRounds runs rounds+1 bursts of size ops at once, before each
// burst and after it off the clock; the first burst is not timed.
func burstRounds(ctx context.Context, rounds, size int, before func(context.Context) error, op func(context.Context, int) error, after func(context.Context) error) (latency, error) {
	var all []time.Duration
	for round := 0; round <= rounds; round++ {
		if err := before(ctx); err != nil {
			return latency{}, err
		}
		took := make([]time.Duration, size)
		errs := make([]error, size)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range size {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				t0 := time.Now()
				errs[i] = op(ctx, i)
				took[i] = time.Since(t0)
			}()
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return latency{}, err
			}
		}
		if after != nil {
			if err := after(ctx); err != nil {
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

// pacedFloors times what any answer at pace costs this host, the floor
// under a pooled create's: a GET of a live session (a lookup and an HTTP
// round trip through the same client) and a 4 KiB write and fdatasync of
// a written file beside the daemon's database (one durable write, the
// least a filesystem can do). Each runs n times, one every interval, the
// two staggered by half of it, so that the daemon and the disk idle
// between as they do between paced creates.
func pacedFloors(ctx context.Context, d *daemon, n int, interval time.Duration) (get, durable latency, err error) {
	s, done, err := d.liveSession(ctx)
	if err != nil {
		return get, durable, err
	}
	defer done()
	f, err := os.CreateTemp(d.dir, "fdatasync-")
	if err != nil {
		return get, durable, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	const size = 1 << 20
	if _, err := f.Write(make([]byte, size)); err != nil {
		return get, durable, err
	}
	if err := f.Sync(); err != nil {
		return get, durable, err
	}
	page := make([]byte, 4096)
	var gets, syncs []time.Duration
	tick := time.NewTicker(interval / 2)
	defer tick.Stop()
	for i := 0; i < 2*n; i++ {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return get, durable, ctx.Err()
		}
		t0 := time.Now()
		if i%2 == 0 {
			if _, err := d.c.GetSession(ctx, s.ID); err != nil {
				return get, durable, err
			}
			gets = append(gets, time.Since(t0))
			continue
		}
		if _, err := f.WriteAt(page, int64(i/2*len(page)%size)); err != nil {
			return get, durable, err
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return get, durable, err
		}
		syncs = append(syncs, time.Since(t0))
	}
	return percentiles(gets), percentiles(syncs), nil
}

// gets times n GETs of one live session, back to back: the API's floor
// under an execution (one HTTP round trip and its JSON, no sandbox).
func gets(ctx context.Context, d *daemon, n int) (latency, error) {
	s, done, err := d.liveSession(ctx)
	if err != nil {
		return latency{}, err
	}
	defer done()
	return times(ctx, n, func(ctx context.Context) error {
		_, err := d.c.GetSession(ctx, s.ID)
		return err
	}, nil)
}
