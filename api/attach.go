package api

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// AttachRequest is the body of POST /v1/sessions/{id}/attach: a process to
// run in the session's sandbox, its standard streams on the connection the
// answer upgrades (docker's exec -i / -it).
type AttachRequest struct {
	// Argv is the command and its arguments, run as is (no shell).
	Argv []string          `json:"argv"`
	Env  map[string]string `json:"env,omitempty"`
	Cwd  string            `json:"cwd,omitempty"`
	// TTY gives the process a pseudo-terminal of Rows x Cols (stdout and
	// stderr are then one stream, as on a terminal).
	TTY  bool   `json:"tty,omitempty"`
	Rows uint16 `json:"rows,omitempty"`
	Cols uint16 `json:"cols,omitempty"`
}

// AttachUpgrade is the protocol an attach upgrades its connection to
// (headers Connection: Upgrade, Upgrade: AttachUpgrade; the answer is 101).
const AttachUpgrade = "sandboxd-attach/1"

// After the 101 both sides send frames: a type byte, a payload length (4
// bytes, big-endian), the payload.
const (
	// FrameStdin (client): bytes for the process's standard input.
	FrameStdin byte = 0
	// FrameStdout and FrameStderr (daemon): the process's output; with a
	// TTY everything is stdout.
	FrameStdout byte = 1
	FrameStderr byte = 2
	// FrameExit (daemon), the last frame: the exit status, 4 bytes
	// big-endian (128+N for a signal N, as shells say).
	FrameExit byte = 3
	// FrameCloseStdin (client): the input ended (EOF).
	FrameCloseStdin byte = 4
	// FrameResize (client): the terminal's new size, rows then columns,
	// 2 bytes each big-endian.
	FrameResize byte = 5
)

// MaxFrame bounds a frame's payload.
const MaxFrame = 1 << 20

// WriteFrame writes one frame to w.
func WriteFrame(w io.Writer, typ byte, payload []byte) error {
	if len(payload) > MaxFrame {
		return fmt.Errorf("frame of %d bytes, over %d", len(payload), MaxFrame)
	}
	// One write: a peer that ends at the frame (the exit) must not meet
	// a second write of the same frame (EPIPE).
	b := make([]byte, 5, 5+len(payload))
	b[0] = typ
	binary.BigEndian.PutUint32(b[1:], uint32(len(payload)))
	_, err := w.Write(append(b, payload...))
	return err
}

// ErrFrameTooLarge is a frame whose length is over MaxFrame: the stream is
// not one of frames.
var ErrFrameTooLarge = errors.New("attach frame too large")

// ReadFrame reads one frame from r into buf (grown as needed) and returns
// its type and payload, which the next ReadFrame may overwrite.
func ReadFrame(r io.Reader, buf []byte) (typ byte, payload []byte, err error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > MaxFrame {
		return 0, nil, ErrFrameTooLarge
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return h[0], buf, nil
}

// ResizePayload is a FrameResize's payload.
func ResizePayload(rows, cols uint16) []byte {
	b := make([]byte, 4)
	binary.BigEndian.PutUint16(b, rows)
	binary.BigEndian.PutUint16(b[2:], cols)
	return b
}

// ParseResize reads a FrameResize's payload.
func ParseResize(p []byte) (rows, cols uint16, ok bool) {
	if len(p) != 4 {
		return 0, 0, false
	}
	return binary.BigEndian.Uint16(p), binary.BigEndian.Uint16(p[2:]), true
}

// ExitPayload is a FrameExit's payload.
func ExitPayload(code int) []byte {
	return binary.BigEndian.AppendUint32(nil, uint32(int32(code)))
}

// ParseExit reads a FrameExit's payload.
func ParseExit(p []byte) (int, bool) {
	if len(p) != 4 {
		return 0, false
	}
	return int(int32(binary.BigEndian.Uint32(p))), true
}

// ProcessRequest is the body of POST /v1/sessions/{id}/processes: a
// command that runs in the background (exec --detach), its output in a
// file the daemon serves (GET …/processes/{pid}/logs). With Stdin or TTY
// the daemon holds its streams instead (an attached process, see
// processes.go): input can be sent to it, its stdout and stderr are kept
// apart, and its output is followed from its start or from now.
type ProcessRequest struct {
	Argv []string          `json:"argv"`
	Env  map[string]string `json:"env,omitempty"`
	Cwd  string            `json:"cwd,omitempty"`
	// Stdin keeps the process's input open for POST …/{pid}/stdin.
	Stdin bool `json:"stdin,omitempty"`
	// TTY runs it on a terminal of that size (its output one stream,
	// "pty").
	TTY *TermSize `json:"tty,omitempty"`
	// Tag names it, for a caller that finds its processes again.
	Tag string `json:"tag,omitempty"`
	// TimeoutS kills it that many seconds after its start (absent or 0:
	// never).
	TimeoutS float64 `json:"timeout_s,omitempty"`
}

// Process is one process of a session's sandbox (GET …/processes), as the
// sandbox names it.
type Process struct {
	PID       int       `json:"pid"`
	PPID      int       `json:"ppid"`
	Command   string    `json:"command"`
	StartedAt time.Time `json:"started_at,omitzero"`
	// CPUSeconds and RSSBytes are what it used so far (RSSBytes 0 under
	// runsc, which does not say).
	CPUSeconds float64 `json:"cpu_seconds"`
	RSSBytes   uint64  `json:"rss_bytes"`
	// Detached says it was started with POST …/processes: its output has
	// a log.
	Detached bool `json:"detached,omitempty"`
	// ExitCode, on a detached process that ended, is how (in its answer
	// to POST, and in GET …/processes/{pid}/logs' header).
	ExitCode *int `json:"exit_code,omitempty"`
	// Attached says the daemon holds its streams (started with stdin or
	// a tty); Argv, Env, Cwd, Tag and TTY are what it was started with.
	Attached bool              `json:"attached,omitempty"`
	Argv     []string          `json:"argv,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	Cwd      string            `json:"cwd,omitempty"`
	Tag      string            `json:"tag,omitempty"`
	TTY      *TermSize         `json:"tty,omitempty"`
}

// ProcessList is the answer of GET /v1/sessions/{id}/processes.
type ProcessList struct {
	Processes []Process `json:"processes"`
}

// HeaderProcessRunning, on GET …/processes/{pid}/logs, says whether the
// process still runs ("true") or ended ("false"), for a follower.
const HeaderProcessRunning = "Sandboxd-Process-Running"

// HeaderProcessExitCode, on the same answer, is how the process ended,
// when the daemon that started it saw it end.
const HeaderProcessExitCode = "Sandboxd-Process-Exit-Code"
