package isolation

import "github.com/sandboxd/sandboxd/isolation/agent"

// The values the runtime's contract names. They are the HTTP API's strings
// (api.RuntimeRunc, api.StatusOK, api.MCPGatewayDir…), but the runtime's
// own, so that isolation imports nothing of the API: the daemon hands them
// through unchanged, and daemon/isolation_test.go checks the two still
// agree.

// Runtimes a sandbox runs on (Spec.Runtime, RuntimeInfo.Name).
const (
	RuntimeRunc  = "runc"
	RuntimeRunsc = "runsc"
)

// Statuses an execution ends with (ExecResult.Status): the agent's.
const (
	StatusOK          = agent.StatusOK
	StatusError       = agent.StatusError
	StatusTimeout     = agent.StatusTimeout
	StatusKilled      = agent.StatusKilled
	StatusInterrupted = agent.StatusInterrupted
)

// Languages an execution is written in (ExecOptions.Language): the
// agent's.
const (
	LanguagePython = agent.LanguagePython
	LanguageShell  = agent.LanguageShell
	// LanguageJavaScript runs in node (contexts; agents of protocol 15 on).
	LanguageJavaScript = agent.LanguageJavaScript
)

// Output streams (the stream an Output gets).
const (
	StreamStdout = agent.TypeStdout
	StreamStderr = agent.TypeStderr
)

// Where a session's MCP gateway (Spec.Gateway) is inside its sandbox: the
// folder with its socket and helper module, on the sandbox's PYTHONPATH,
// and the variable that names the socket in its environment.
const (
	GatewayDir       = "/run/sandboxd-mcp"
	GatewaySocket    = "gateway.sock"
	GatewaySocketEnv = "SANDBOXD_MCP_SOCKET"
)
