// Package agent ships the in-sandbox agent (Python modules, standard
// library only) and speaks its line protocol from the daemon's side.
//
// The channel is a Unix socket whose file lives on the host, under the
// daemon's run dir, and whose listening end is handed to the sandbox's PID 1
// as fd 3. Sandboxed code can neither see nor replace the socket file, and a
// restarted daemon reconnects to the same path.
//
// The agent is split by process, then by job: python/_sandboxd_agent.py is
// the supervisor's entry (PID 1, answering the daemon's requests), with
// _sandboxd_daemon.py (the daemon's connection), _sandboxd_cells.py and
// _sandboxd_shell.py (the two kinds of execution), _sandboxd_answer.py
// (an answer's bounds) and _sandboxd_procs.py (its children);
// python/_sandboxd_worker.py is the forked interpreter that runs cells,
// with _sandboxd_display.py; python/_sandboxd_wire.py is what both speak.
// python/_sandboxd_node.js is the worker of JavaScript contexts, run by
// the template's node. supervisor/ is the native supervisor (C, see
// SupervisorBinary), which sandboxes start with in the Python supervisor's
// place when the daemon has it: the same protocol, the same worker. Every .py file in python is a module of the agent,
// and every file there is installed with it (Files). What the Go
// side also knows (the listening fd, op and message names, statuses, the
// protocol version) is defined here only and handed to the Python as a
// generated module (see Files).
package agent

import (
	"embed"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// sources are the agent's Python modules, as the runtime installs them.
//
//go:embed python/*.py python/*.js
var sources embed.FS

// File is one file of the agent as it is installed in Dir.
type File struct {
	Name string
	Data []byte
}

// Files are the agent's modules as the runtime writes them into a
// sandbox's /etc, in Dir, compiled where it can: the Python modules and
// the generated ConstsModule. The sandbox starts the agent with
// `python3 -S -c Bootstrap`: importing compiled modules saves compiling the
// source at every start. Sorted by name.
func Files() []File {
	ents, err := fs.ReadDir(sources, "python")
	if err != nil {
		panic(err) // embedded: cannot fail
	}
	files := []File{{Name: ConstsModule + ".py", Data: []byte(constsSource())}}
	for _, e := range ents {
		b, err := sources.ReadFile(path.Join("python", e.Name()))
		if err != nil {
			panic(err)
		}
		files = append(files, File{Name: e.Name(), Data: b})
	}
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	return files
}

// modules are the names of the agent's modules, which the worker hides
// from user code.
func modules() []string {
	ents, _ := fs.ReadDir(sources, "python")
	names := []string{ConstsModule}
	for _, e := range ents {
		if m, ok := strings.CutSuffix(e.Name(), ".py"); ok {
			names = append(names, m)
		}
	}
	slices.Sort(names)
	return names
}

// Where the agent lives inside a sandbox, and how it starts. Module is the
// entry point, the supervisor; it imports the agent's other modules. The
// bootstrap puts Dir first on the path in place of the working folder
// (/workspace, where user files could shadow the modules).
const (
	Dir       = "/etc/sandboxd"
	Module    = "_sandboxd_agent"
	Bootstrap = "import sys; sys.path[0] = '" + Dir + "'; import " + Module + "; " + Module + ".main()"
)

// ListenFD is the descriptor number the agent expects its listener on.
// Without it (gVisor passes no descriptors) the agent listens at
// ListenPath instead, in a folder the host binds in.
const (
	ListenFD   = 3
	ListenPath = "/run/sandboxd/agent.sock"
)

// SpawnFD and SpawnPath are where the agent listens for the processes the
// daemon starts beside the interpreter (protocol 16; spawn.go), as
// ListenFD and ListenPath are for the daemon's requests.
const (
	SpawnFD   = 4
	SpawnPath = "/run/sandboxd/spawn.sock"
)

// Request is one line from the daemon to the agent.
type Request struct {
	Op        string            `json:"op"`
	ID        string            `json:"id,omitempty"`
	Language  string            `json:"language,omitempty"`
	Code      string            `json:"code,omitempty"`
	Timeout   float64           `json:"timeout,omitempty"`
	Grace     float64           `json:"grace,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	Cwd       string            `json:"cwd,omitempty"`
	MaxOutput int64             `json:"max_output,omitempty"`
	// MaxAnswer bounds the whole answer (version 4 on; older agents
	// ignore it).
	MaxAnswer int64 `json:"max_answer,omitempty"`
	// Ready, in a ping, asks for the pong once the interpreter has
	// finished starting, not as soon as the agent can answer.
	Ready bool `json:"ready,omitempty"`
	// Context, in an exec, names the interpreter that runs a Python cell
	// ("" : ContextDefault); ContextCwd is that context's folder, where
	// the agent starts it when it has no such context (a new sandbox).
	// In an OpContext, Context is the one to start or delete (Action),
	// in Cwd. Version 15 on; older agents would run every cell in
	// their one interpreter, so the Conn refuses to send them one.
	Context    string `json:"context,omitempty"`
	ContextCwd string `json:"context_cwd,omitempty"`
	Action     string `json:"action,omitempty"`
	// From, in an OpContext start, is the context whose interpreter the
	// new one is a copy of (forked: its globals, copied on write).
	From string `json:"from,omitempty"`
	// Checkpoints, in an exec of a Python cell, asks the agent to park a
	// copy of the context's interpreter as it is before the cell, keeping
	// the newest Checkpoints of them (at most MaxCheckpoints; 0: none),
	// which an OpUndo puts back. Version 17 on; the Conn drops it for
	// older agents.
	Checkpoints int `json:"checkpoints,omitempty"`
	// Steps, in an OpUndo, is how many executions to take back (1: the
	// last), counted in the context's parked copies.
	Steps int `json:"steps,omitempty"`
}

// Message is one line from the agent. Which fields are set depends on Type.
type Message struct {
	Type     string     `json:"type"`
	ID       string     `json:"id,omitempty"`
	Language string     `json:"language,omitempty"`
	Data     string     `json:"data,omitempty"`
	Message  string     `json:"message,omitempty"`
	PID      int        `json:"pid,omitempty"`
	Status   string     `json:"status,omitempty"`
	ExitCode int        `json:"exit_code,omitempty"`
	Result   *string    `json:"result,omitempty"`
	Error    *ExecError `json:"error,omitempty"`
	Outputs  []Output   `json:"outputs,omitempty"`
	// Output, in a display line, is what the cell displayed.
	Output     *Output `json:"output,omitempty"`
	Truncated  bool    `json:"truncated,omitempty"`
	StateReset bool    `json:"state_reset,omitempty"`
	// Checkpoint, in a done line, says a copy of the interpreter as it was
	// before the cell was parked (Request.Checkpoints): an OpUndo can put
	// it back.
	Checkpoint bool `json:"checkpoint,omitempty"`
	// Undone, in a TypeUndone line, is how many executions were taken
	// back.
	Undone     int     `json:"undone,omitempty"`
	DurationMS float64 `json:"duration_ms,omitempty"`
	// Protocol, in a pong, is the agent's protocol version; absent (0)
	// from agents of version 1.
	Protocol int `json:"protocol,omitempty"`
	// Context, in a TypeContext line, is the context started or deleted.
	Context string `json:"context,omitempty"`
	// Undelivered, in a pong, is how an execution ended whose answer the
	// agent could not send: the daemon was gone.
	Undelivered *Message `json:"undelivered,omitempty"`
	// PreloadError, in a pong, is how the template's preload code failed.
	PreloadError *ExecError `json:"preload_error,omitempty"`
}

// ExecError, in a done line, is the exception the code raised; in a pong,
// how the preload code failed.
type ExecError struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Traceback string `json:"traceback"`
}

// Output is one rich output of a cell: a figure, what display() showed, or
// the last expression's representations. MIME and Data are the richest
// (Data base64 whatever the type); Bundle is every representation, mime ->
// data, text types as text, binary ones base64.
type Output struct {
	MIME   string            `json:"mime"`
	Data   string            `json:"data"`
	Bundle map[string]string `json:"bundle,omitempty"`
}
