package mcpgateway

import _ "embed"

// helperSource is the module code in a sandbox imports to call the
// gateway (api.MCPHelperModule), written into each session's folder.
//
//go:embed python/sandboxd_mcp.py
var helperSource []byte
