// Package agent ships the in-sandbox agent (agent.py, standard library
// Python) and speaks its line protocol from the daemon's side.
//
// The channel is a Unix socket whose file lives on the host, under the
// daemon's run dir, and whose listening end is handed to the sandbox's PID 1
// as fd 3. Sandboxed code can neither see nor replace the socket file, and a
// restarted daemon reconnects to the same path.
package agent

import (
	_ "embed"

	"github.com/sandboxd/sandboxd/api"
)

// Script is the agent's source. The runtime writes it into the sandbox's
// /etc as Dir/Module.py, compiled where it can, and starts it with
// `python3 -S -c Bootstrap`: importing a compiled module saves compiling
// the source at every start.
//
//go:embed agent.py
var Script string

// Where the agent lives inside a sandbox, and how it starts. The
// bootstrap puts Dir first on the path in place of the working folder
// (/workspace, where user files could shadow the module).
const (
	Dir       = "/etc/sandboxd"
	Module    = "_sandboxd_agent"
	Bootstrap = "import sys; sys.path[0] = '" + Dir + "'; import " + Module + "; " + Module + ".main()"
)

// ListenFD is the descriptor number the agent expects its listener on.
const ListenFD = 3

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
	// Ready, in a ping, asks for the pong once the interpreter has
	// finished starting, not as soon as the agent can answer.
	Ready bool `json:"ready,omitempty"`
}

// Message is one line from the agent. Which fields are set depends on Type.
type Message struct {
	Type       string         `json:"type"`
	ID         string         `json:"id,omitempty"`
	Language   string         `json:"language,omitempty"`
	Data       string         `json:"data,omitempty"`
	Message    string         `json:"message,omitempty"`
	PID        int            `json:"pid,omitempty"`
	Status     string         `json:"status,omitempty"`
	ExitCode   int            `json:"exit_code,omitempty"`
	Result     *string        `json:"result,omitempty"`
	Error      *api.ExecError `json:"error,omitempty"`
	Outputs    []api.Output   `json:"outputs,omitempty"`
	Truncated  bool           `json:"truncated,omitempty"`
	StateReset bool           `json:"state_reset,omitempty"`
	DurationMS float64        `json:"duration_ms,omitempty"`
	// Undelivered, in a pong, is how an execution ended whose answer the
	// agent could not send: the daemon was gone.
	Undelivered *Message `json:"undelivered,omitempty"`
	// PreloadError, in a pong, is how the template's preload code failed.
	PreloadError *api.ExecError `json:"preload_error,omitempty"`
}
