package e2b

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/containerd/errdefs"

	"github.com/sandboxd/sandboxd/api"
)

// envd's process.Process over sandboxd's attached processes: the daemon
// holds a started process's streams, so it outlives the request that
// started it, its output is followed from its start (Start) or from now
// (Connect), and its input, terminal and signals are separate calls.

type processConfig struct {
	Cmd  string            `json:"cmd"`
	Args []string          `json:"args,omitempty"`
	Envs map[string]string `json:"envs,omitempty"`
	Cwd  *string           `json:"cwd,omitempty"`
}

type ptySize struct {
	Cols uint16 `json:"cols"`
	Rows uint16 `json:"rows"`
}

type pty struct {
	Size *ptySize `json:"size,omitempty"`
}

type startRequest struct {
	Process *processConfig `json:"process"`
	PTY     *pty           `json:"pty,omitempty"`
	Tag     *string        `json:"tag,omitempty"`
	Stdin   *bool          `json:"stdin,omitempty"`
}

// processSelector is a oneof: a pid or a tag.
type processSelector struct {
	PID *uint32 `json:"pid,omitempty"`
	Tag *string `json:"tag,omitempty"`
}

type selectorRequest struct {
	Process *processSelector `json:"process"`
}

type processInput struct {
	Stdin []byte `json:"stdin,omitempty"`
	PTY   []byte `json:"pty,omitempty"`
}

type sendInputRequest struct {
	Process *processSelector `json:"process"`
	Input   *processInput    `json:"input"`
}

type sendSignalRequest struct {
	Process *processSelector `json:"process"`
	Signal  string           `json:"signal"`
}

type updateRequest struct {
	Process *processSelector `json:"process"`
	PTY     *pty             `json:"pty,omitempty"`
}

type processInfo struct {
	Config processConfig `json:"config"`
	PID    uint32        `json:"pid"`
	Tag    *string       `json:"tag,omitempty"`
}

type listResponse struct {
	Processes []processInfo `json:"processes"`
}

type startEvent struct {
	PID uint32 `json:"pid"`
}

// dataEvent is a oneof: stdout, stderr or pty, base64 (bytes).
type dataEvent struct {
	Stdout []byte `json:"stdout,omitempty"`
	Stderr []byte `json:"stderr,omitempty"`
	PTY    []byte `json:"pty,omitempty"`
}

type endEvent struct {
	ExitCode int32   `json:"exitCode"`
	Exited   bool    `json:"exited"`
	Status   string  `json:"status"`
	Error    *string `json:"error,omitempty"`
}

// processEvent is a oneof.
type processEvent struct {
	Start     *startEvent `json:"start,omitempty"`
	Data      *dataEvent  `json:"data,omitempty"`
	End       *endEvent   `json:"end,omitempty"`
	Keepalive *empty      `json:"keepalive,omitempty"`
}

// eventResponse is StartResponse and ConnectResponse.
type eventResponse struct {
	Event processEvent `json:"event"`
}

func (g *Gateway) processRPCs() []rpc {
	const svc = "/process.Process/"
	return []rpc{
		serverStream(svc+"Start", g.procStart),
		serverStream(svc+"Connect", g.procConnect),
		unary(svc+"List", g.procList),
		unary(svc+"SendInput", g.procSendInput),
		unary(svc+"CloseStdin", g.procCloseStdin),
		unary(svc+"SendSignal", g.procSendSignal),
		unary(svc+"Update", g.procUpdate),
	}
}

// procStart starts a command, then streams its start, its output and
// its end. The command outlives the call; the call's deadline
// (Connect-Timeout-Ms) is the command's lifetime, as envd's.
func (g *Gateway) procStart(ctx context.Context, req *startRequest, st *connect.ServerStream[eventResponse]) error {
	if req.Process == nil || req.Process.Cmd == "" {
		return errdefs.ErrInvalidArgument.WithMessage("process.cmd is required")
	}
	s := sessionOf(ctx)
	// No cwd: the daemon starts it in the home of the sandbox's user
	// (/home/user for the gateway's template; template.go).
	pr := &api.ProcessRequest{Argv: append([]string{req.Process.Cmd}, req.Process.Args...), Env: req.Process.Envs, Stdin: true}
	if req.Process.Cwd != nil && *req.Process.Cwd != "" {
		cwd, err := g.cwdOf(s, *req.Process.Cwd)
		if err != nil {
			return err
		}
		pr.Cwd = cwd
	}
	if req.PTY != nil {
		pr.TTY = &api.TermSize{Rows: 24, Cols: 80}
		if req.PTY.Size != nil {
			pr.TTY = &api.TermSize{Rows: req.PTY.Size.Rows, Cols: req.PTY.Size.Cols}
		}
	}
	if req.Tag != nil {
		pr.Tag = *req.Tag
	}
	if d, ok := ctx.Deadline(); ok {
		pr.TimeoutS = max(0.001, time.Until(d).Seconds())
	}
	p, err := g.o.Daemon.StartProcess(ctx, s.ID, pr)
	if err != nil {
		return err
	}
	// Without stdin the command reads EOF, as envd's does.
	if (req.Stdin == nil || !*req.Stdin) && pr.TTY == nil {
		if err := g.o.Daemon.WriteStdin(context.WithoutCancel(ctx), s.ID, p.PID, nil, true); err != nil && !errdefs.IsConflict(err) {
			return err
		}
	}
	return g.streamProcess(ctx, st, s.ID, p.PID, "start")
}

// procConnect streams a running command's output from now, and its end.
func (g *Gateway) procConnect(ctx context.Context, req *selectorRequest, st *connect.ServerStream[eventResponse]) error {
	s := sessionOf(ctx)
	pid, err := g.selectProcess(ctx, s.ID, req.Process)
	if err != nil {
		return err
	}
	return g.streamProcess(ctx, st, s.ID, pid, "now")
}

// streamProcess sends the start event, then the output from from, and the
// end; keepalives while it is quiet.
func (g *Gateway) streamProcess(ctx context.Context, st *connect.ServerStream[eventResponse], id string, pid int, from string) error {
	var mu sync.Mutex
	send := func(ev processEvent) error {
		mu.Lock()
		defer mu.Unlock()
		return st.Send(&eventResponse{Event: ev})
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go keepalive(ctx, cancel, func() error { return send(processEvent{Keepalive: &empty{}}) })
	err := g.o.Daemon.ProcessOutput(ctx, id, pid, from, true, func() {
		_ = send(processEvent{Start: &startEvent{PID: uint32(pid)}})
	}, func(o api.ProcessOutput) error {
		if o.ExitCode != nil {
			code := *o.ExitCode
			end := &endEvent{ExitCode: int32(code), Exited: true, Status: "exit status " + strconv.Itoa(code)}
			if code > 128 {
				end.Status = "signal: " + strconv.Itoa(code-128)
			}
			return send(processEvent{End: end})
		}
		b, err := base64.StdEncoding.DecodeString(o.DataB64)
		if err != nil {
			return err
		}
		var d dataEvent
		switch o.Stream {
		case api.StreamStderr:
			d.Stderr = b
		case api.StreamPTY:
			d.PTY = b
		default:
			d.Stdout = b
		}
		return send(processEvent{Data: &d})
	})
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil // the client went: the command runs on
	}
	return err
}

// selectProcess is the pid a selector names: a pid, or the last command
// started with a tag that runs.
func (g *Gateway) selectProcess(ctx context.Context, id string, sel *processSelector) (int, error) {
	switch {
	case sel == nil:
		return 0, errdefs.ErrInvalidArgument.WithMessage("process (a pid or a tag) is required")
	case sel.PID != nil:
		return int(*sel.PID), nil
	case sel.Tag != nil:
		ps, err := g.o.Daemon.Processes(ctx, id)
		if err != nil {
			return 0, err
		}
		for i := len(ps) - 1; i >= 0; i-- {
			if ps[i].Attached && ps[i].Tag == *sel.Tag {
				return ps[i].PID, nil
			}
		}
		return 0, errdefs.ErrNotFound.WithMessage(fmt.Sprintf("no process with tag %s", api.Quote(*sel.Tag)))
	}
	return 0, errdefs.ErrInvalidArgument.WithMessage("process needs a pid or a tag")
}

// procList lists the commands started through envd (attached) that run.
func (g *Gateway) procList(ctx context.Context, _ *empty) (*listResponse, error) {
	ps, err := g.o.Daemon.Processes(ctx, sessionOf(ctx).ID)
	if err != nil {
		return nil, err
	}
	out := &listResponse{Processes: []processInfo{}}
	for _, p := range ps {
		if !p.Attached || len(p.Argv) == 0 {
			continue
		}
		cwd := fromSandbox(p.Cwd)
		info := processInfo{PID: uint32(p.PID), Config: processConfig{Cmd: p.Argv[0], Args: p.Argv[1:], Envs: p.Env, Cwd: &cwd}}
		if p.Tag != "" {
			tag := p.Tag
			info.Tag = &tag
		}
		out.Processes = append(out.Processes, info)
	}
	return out, nil
}

func (g *Gateway) procSendInput(ctx context.Context, req *sendInputRequest) (*empty, error) {
	s := sessionOf(ctx)
	pid, err := g.selectProcess(ctx, s.ID, req.Process)
	if err != nil {
		return nil, err
	}
	if req.Input == nil {
		return nil, errdefs.ErrInvalidArgument.WithMessage("input is required")
	}
	b := req.Input.Stdin
	if req.Input.PTY != nil {
		b = req.Input.PTY
	}
	return &empty{}, g.processError(g.o.Daemon.WriteStdin(ctx, s.ID, pid, b, false))
}

func (g *Gateway) procCloseStdin(ctx context.Context, req *selectorRequest) (*empty, error) {
	s := sessionOf(ctx)
	pid, err := g.selectProcess(ctx, s.ID, req.Process)
	if err != nil {
		return nil, err
	}
	return &empty{}, g.processError(g.o.Daemon.WriteStdin(ctx, s.ID, pid, nil, true))
}

// signals are envd's Signal enum by name and number.
var signals = map[string]string{"SIGNAL_SIGKILL": "KILL", "SIGNAL_SIGTERM": "TERM", "9": "KILL", "15": "TERM"}

func (g *Gateway) procSendSignal(ctx context.Context, req *sendSignalRequest) (*empty, error) {
	s := sessionOf(ctx)
	pid, err := g.selectProcess(ctx, s.ID, req.Process)
	if err != nil {
		return nil, err
	}
	sig, ok := signals[req.Signal]
	if !ok {
		return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("signal %s: SIGNAL_SIGKILL or SIGNAL_SIGTERM", api.Quote(req.Signal)))
	}
	return &empty{}, g.o.Daemon.SignalProcess(ctx, s.ID, pid, sig)
}

// procUpdate resizes a command's terminal.
func (g *Gateway) procUpdate(ctx context.Context, req *updateRequest) (*empty, error) {
	s := sessionOf(ctx)
	pid, err := g.selectProcess(ctx, s.ID, req.Process)
	if err != nil {
		return nil, err
	}
	if req.PTY == nil || req.PTY.Size == nil {
		return &empty{}, nil // nothing to change
	}
	return &empty{}, g.o.Daemon.ResizeProcess(ctx, s.ID, pid, api.TermSize{Rows: req.PTY.Size.Rows, Cols: req.PTY.Size.Cols})
}

// processError is a daemon's conflict about a process that ended as envd
// says it: not found.
func (g *Gateway) processError(err error) error {
	if errdefs.IsConflict(err) {
		return connect.NewError(connect.CodeNotFound, err)
	}
	return err
}

// keepalive calls send every keepaliveEvery until ctx ends; a send that
// fails (the client went) cancels.
func keepalive(ctx context.Context, cancel context.CancelFunc, send func() error) {
	t := time.NewTicker(keepaliveEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if send() != nil {
				cancel()
				return
			}
		}
	}
}

// cwdOf is E2B folder p as a command of sandbox s starts in it: under
// /home/user itself in a sandbox of E2B's user (the daemon takes its
// home's folders), else the /workspace folder it is.
func (g *Gateway) cwdOf(s *api.Session, p string) (string, error) {
	if !slices.Contains(g.o.HomeTemplates, s.Template) {
		return toSandbox(p)
	}
	if !strings.HasPrefix(p, "/") {
		p = path.Join(home, p)
	}
	return path.Clean(p), nil
}
