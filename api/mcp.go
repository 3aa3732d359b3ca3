package api

import "encoding/json"

// The MCP gateway: code in a session created with mcp_servers calls the
// host's MCP servers through a Unix socket the daemon binds into its
// sandbox (no network needed). This is that socket's protocol, what the
// helper module sandboxd_mcp speaks: one JSON object a line each way, a
// request answered before the next is read.

// Where the gateway is inside a sandbox: its folder holds the socket and
// the helper module (on the sandbox's PYTHONPATH), and MCPSocketEnv names
// the socket in the sandbox's environment.
const (
	MCPGatewayDir    = "/run/sandboxd-mcp"
	MCPGatewaySocket = "gateway.sock"
	MCPHelperModule  = "sandboxd_mcp"
	MCPSocketEnv     = "SANDBOXD_MCP_SOCKET"
)

// MCP gateway operations.
const (
	MCPOpCall = "call"
	MCPOpList = "list"
)

// MCPRequest is one line from the sandbox: call a tool of a granted
// server, or list the granted servers and the tools they may call.
type MCPRequest struct {
	Op     string `json:"op"`
	Server string `json:"server,omitempty"`
	Tool   string `json:"tool,omitempty"`
	// Arguments is the tool's arguments, a JSON object.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// TimeoutS shortens the server's timeout for this call (it cannot
	// lengthen it).
	TimeoutS float64 `json:"timeout_s,omitempty"`
}

// MCPAnswer is the gateway's answer to one request: the tool's result
// (MCP's CallToolResult, whose isError says the tool itself failed), the
// servers for a list, or why the gateway did not make the call.
type MCPAnswer struct {
	OK      bool             `json:"ok"`
	Result  json.RawMessage  `json:"result,omitempty"`
	Servers []MCPServerInfo  `json:"servers,omitempty"`
	Error   *MCPGatewayError `json:"error,omitempty"`
}

// MCPGatewayError says why a call was not made or did not finish. Code is
// one of the MCPOutcome values but ok and tool_error.
type MCPGatewayError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// MCPServerInfo is a server a session may call, with the tools it may
// call on it: in /v1/info every configured server (tools as configured,
// "*" for all); through the gateway a granted one, its tools as the
// server describes them.
type MCPServerInfo struct {
	Name  string        `json:"name"`
	Tools []MCPToolInfo `json:"tools"`
	// Error says why the server could not list its tools (gateway only).
	Error string `json:"error,omitempty"`
}

// MCPToolInfo is one tool.
type MCPToolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

// Outcomes of a gateway call, in its event (type "mcp") and its log line.
const (
	MCPOutcomeOK        = "ok"         // the tool answered
	MCPOutcomeToolError = "tool_error" // the tool answered that it failed (isError)
	MCPOutcomeRefused   = "refused"    // the server is not granted, or the tool not allowed
	MCPOutcomeTimeout   = "timeout"    // no answer within the timeout
	MCPOutcomeTooLarge  = "too_large"  // the answer was over the server's max_bytes
	MCPOutcomeFailed    = "failed"     // the server could not be reached or broke
	MCPOutcomeInvalid   = "invalid"    // the request was malformed
)
