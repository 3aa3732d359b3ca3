# A small MCP server on stdio, standard library only, for TestMCPProxy to
# run inside a session through sandboxctl mcp-proxy: its one tool tells
# where it runs, so the test knows it runs sandboxed.
import json
import os
import sys

TOOL = {"name": "whereami", "description": "Tells where this server runs.",
        "inputSchema": {"type": "object", "properties": {"echo": {"type": "string"}}}}


def ours():
    """How many of the session's processes are this server or its bridge."""
    n = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        n += b"server.py" in cmd or b"SANDBOXD_MCP" in cmd
    return n


def answer(req, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": result}) + "\n")
    sys.stdout.flush()


print("sandboxed mcp server up", file=sys.stderr, flush=True)
for line in sys.stdin:
    req = json.loads(line)
    method = req.get("method")
    if "id" not in req:
        continue  # a notification
    if method == "initialize":
        answer(req, {"protocolVersion": req["params"]["protocolVersion"], "capabilities": {"tools": {}},
                     "serverInfo": {"name": "sandboxed", "version": "1.0"}})
    elif method == "tools/list":
        answer(req, {"tools": [TOOL]})
    elif method == "tools/call":
        where = {"uid": os.getuid(), "cwd": os.getcwd(), "pid": os.getpid(),
                 "echo": req["params"].get("arguments", {}).get("echo", ""),
                 "workspace": sorted(os.listdir("/workspace")), "ours": ours()}
        answer(req, {"content": [{"type": "text", "text": json.dumps(where)}]})
    elif method == "ping":
        answer(req, {})
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32601, "message": "no " + method}}) + "\n")
        sys.stdout.flush()
print("sandboxed mcp server: stdin closed", file=sys.stderr, flush=True)
