package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// SpawnVersion is the first protocol version whose agent starts the
// daemon's processes itself (python/_sandboxd_spawn.py), at a fork's
// cost, where a runtime's exec costs a runc init or a runsc exec.
const SpawnVersion = 16

// ErrNoSpawner means the agent does not listen for processes (it is
// older, or could not): the runtime starts them instead.
var ErrNoSpawner = errors.New("the sandbox agent starts no processes")

// SpawnRequest is a process for the agent to start: its argv, whole
// environment and folder.
type SpawnRequest struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Cwd  string   `json:"cwd,omitempty"`
}

// spawnAnswer is a line of the agent's on a process's connection.
type spawnAnswer struct {
	PID   int     `json:"pid,omitempty"`
	Error *string `json:"error,omitempty"`
	Exit  *int    `json:"exit,omitempty"`
}

// spawnWait bounds how long the agent has to answer a process's request.
const spawnWait = 10 * time.Second

// Spawned is a process the agent started; its connection says when it
// ends.
type Spawned struct {
	PID  int
	conn *net.UnixConn
	r    *bufio.Reader
	wmu  sync.Mutex
}

// Spawn has the agent listening at path start req with stdio as its
// standard input, output and error (the agent gets copies; the caller
// closes its own). ErrNoSpawner if nothing listens there.
func Spawn(ctx context.Context, path string, req *SpawnRequest, stdio [3]*os.File) (*Spawned, error) {
	ctx, cancel := context.WithTimeout(ctx, spawnWait)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%w: %v", ErrNoSpawner, err)
		}
		return nil, err
	}
	conn := c.(*net.UnixConn)
	ok := false
	defer func() {
		if !ok {
			conn.Close()
		}
	}()
	line, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	fds := make([]int, len(stdio))
	for i, f := range stdio {
		fds[i] = int(f.Fd())
	}
	dl, _ := ctx.Deadline()
	_ = conn.SetDeadline(dl)
	// The descriptors go with the first bytes; a long line (argv and
	// environment may be megabytes) is written on after a short send.
	line = append(line, '\n')
	n, _, err := conn.WriteMsgUnix(line, unix.UnixRights(fds...), nil)
	if err == nil && n < len(line) {
		_, err = conn.Write(line[n:])
	}
	if err != nil {
		return nil, fmt.Errorf("send the process to the agent: %w", err)
	}
	s := &Spawned{conn: conn, r: bufio.NewReader(conn)}
	a, err := s.read()
	if err != nil {
		return nil, fmt.Errorf("the agent's answer: %w", err)
	}
	switch {
	case a.Error != nil:
		return nil, errors.New(*a.Error)
	case a.PID <= 0:
		return nil, errors.New("the agent answered no pid")
	}
	_ = conn.SetDeadline(time.Time{})
	s.PID = a.PID
	ok = true
	return s, nil
}

// read reads one answer line, bounded.
func (s *Spawned) read() (*spawnAnswer, error) {
	line, err := s.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, errors.New("the agent sent a line too long")
	}
	if err != nil {
		return nil, err
	}
	var a spawnAnswer
	if err := json.Unmarshal(line, &a); err != nil {
		return nil, fmt.Errorf("the agent sent a bad line: %w", err)
	}
	return &a, nil
}

// killedExit is a process's exit code when its sandbox went first: its
// end is a SIGKILL's.
const killedExit = 128 + int(unix.SIGKILL)

// Wait waits for the process to end and returns its exit code (128+N
// for signal N). The agent gone first (the sandbox stopped) is a kill.
func (s *Spawned) Wait() (int, error) {
	for {
		a, err := s.read()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return killedExit, nil
			}
			return killedExit, err
		}
		if a.Exit != nil {
			return *a.Exit, nil
		}
	}
}

// Signal sends the process signal sig.
func (s *Spawned) Signal(sig unix.Signal) error {
	b, _ := json.Marshal(map[string]int{"signal": int(sig)})
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_ = s.conn.SetWriteDeadline(time.Now().Add(spawnWait))
	_, err := s.conn.Write(append(b, '\n'))
	return err
}

// Close lets go of the process: it runs on, unwatched.
func (s *Spawned) Close() error { return s.conn.Close() }
