// Package e2b is the E2B-compatible gateway: it serves E2B's control plane
// (sandboxes: create, connect, list, kill, timeouts, pause, metrics) and,
// per sandbox, what E2B's envd and code interpreter serve, so that E2B's
// official SDKs work unchanged against one sandboxd host by pointing
// E2B_API_URL and E2B_SANDBOX_URL at it.
//
// It is a client of the daemon's socket, in the pattern of `sandboxctl
// mcp`: it acts as the user who runs it, so the daemon opens no TCP port
// and its tenancy rules hold unchanged. What is the gateway's own (its API
// keys, the secret its sandboxes' access tokens derive from, its id) lives
// in its state folder; what is a sandbox's (its key, template, metadata)
// lives in its session's labels, so that the gateway keeps no copy of the
// daemon's state.
//
// One listener serves everything. A request is dispatched on its path
// first (the control plane's paths), then on its E2b-Sandbox-Id and
// E2b-Sandbox-Port headers (the sandbox's envd or code interpreter), as
// E2B's SDKs send them when E2B_SANDBOX_URL is set.
package e2b
