"""Call the host's MCP servers from code in a sandboxd sandbox.

    from sandboxd_mcp import call, servers
    servers()                                  # what this session may call
    call("search", "web_search", {"q": "gVisor"})

Only the servers the session was created with (mcp_servers) can be called,
and on each only the tools the host allows. Calls go through a Unix socket
of the daemon's (no network needed); the daemon bounds each with the
server's timeout and answer size, and records it. Standard library only.
"""

import json
import os
import socket

__all__ = ["call", "call_raw", "servers", "MCPError", "ToolError"]

SOCKET = os.environ.get("SANDBOXD_MCP_SOCKET", "/run/sandboxd-mcp/gateway.sock")


class MCPError(Exception):
    """The gateway did not make the call, or the call did not finish.

    code says why: refused (server not granted, tool not allowed), timeout,
    too_large, failed (the server could not be reached or broke), invalid
    (a malformed request) or unavailable (no gateway in this sandbox).
    """

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


class ToolError(Exception):
    """The tool answered that it failed; result is its whole answer."""

    def __init__(self, message, result):
        super().__init__(message)
        self.result = result


def _request(req, timeout=None):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError as e:
        raise MCPError("unavailable", "cannot reach the MCP gateway: %s" % e) from None
    with s:
        # The gateway bounds every call with the server's timeout; a
        # timeout of the caller's own is a little longer.
        s.settimeout(None if timeout is None else timeout + 5)
        try:
            s.connect(SOCKET)
        except (FileNotFoundError, ConnectionRefusedError):
            raise MCPError(
                "unavailable",
                "no MCP gateway in this sandbox: create the session with mcp_servers",
            ) from None
        s.sendall(json.dumps(req).encode() + b"\n")
        buf = bytearray()
        while not buf.endswith(b"\n"):
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            buf += chunk
    if not buf.endswith(b"\n"):
        raise MCPError("failed", "the MCP gateway closed the connection")
    ans = json.loads(buf)
    if not ans.get("ok"):
        err = ans.get("error") or {}
        raise MCPError(err.get("code", "failed"), err.get("message", "the call failed"))
    return ans


def call_raw(server, tool, arguments=None, timeout=None):
    """The tool's whole answer, MCP's CallToolResult as a dict
    (content, structuredContent, isError): a failed tool does not raise."""
    req = {"op": "call", "server": server, "tool": tool, "arguments": arguments or {}}
    if timeout:
        req["timeout_s"] = timeout
    return _request(req, timeout)["result"]


def call(server, tool, arguments=None, timeout=None):
    """Call tool on server with arguments (a dict).

    Returns the tool's structured content if it gave some, else its text
    (the text parts joined), else its content parts. Raises ToolError if
    the tool answered that it failed, MCPError if the call was not made or
    did not finish. timeout (seconds) can only shorten the server's.
    """
    res = call_raw(server, tool, arguments, timeout)
    content = res.get("content") or []
    text = "".join(c.get("text", "") for c in content if c.get("type") == "text")
    if res.get("isError"):
        raise ToolError(text or "tool %s of %s failed" % (tool, server), res)
    if res.get("structuredContent") is not None:
        return res["structuredContent"]
    if all(c.get("type") == "text" for c in content):
        return text
    return content


def servers():
    """The MCP servers this session may call: a list of
    {"name", "tools": [{"name", "description", "input_schema"}], "error"?}."""
    return _request({"op": "list"})["servers"]
