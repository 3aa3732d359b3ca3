# The sandbox side of sandboxctl mcp-proxy: runs the command in
# $SANDBOXD_MCP_ARGV (a JSON list) with its stdin and stdout joined to one
# connection from the daemon's port proxy, and exits with the command's
# status. Standard library only: it runs in any session with python3.
#
# It listens on a free loopback port and prints it; the proxy then asks
# for "Upgrade: sandboxd-stdio" on that port, and after the 101 the
# connection carries the command's stdio: its stdout as it comes, and its
# stdin in frames (a 4-byte big-endian length and that many bytes), since
# the port proxy ends both directions when one ends and so cannot carry a
# half-close: a frame of length 0 is the end of stdin, after which the
# command's output still comes until it ends. The command's stderr is this
# execution's, which sandboxctl streams to its own. When the connection
# ends (the MCP client went), the command's stdin closes, and a command
# that does not end by itself is stopped.
import json
import os
import signal
import socket
import subprocess
import sys
import threading

PROTOCOL = b"sandboxd-stdio"
ACCEPT_TIMEOUT = 60.0
STOP_GRACE = 5.0
MAX_FRAME = 1 << 20


def main():
    argv = json.loads(os.environ.pop("SANDBOXD_MCP_ARGV"))
    os.environ.pop("SANDBOXD_MCP_BRIDGE", None)
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    print(ls.getsockname()[1], flush=True)
    ls.settimeout(ACCEPT_TIMEOUT)
    try:
        conn, _ = ls.accept()
    except socket.timeout:
        sys.exit("sandboxctl mcp-proxy: nobody connected")
    ls.close()
    conn.settimeout(None)
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = conn.recv(4096)
        if not chunk:
            sys.exit("sandboxctl mcp-proxy: the connection ended before its request")
        head += chunk
    head, rest = head.split(b"\r\n\r\n", 1)
    if PROTOCOL not in head.lower():
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        sys.exit("sandboxctl mcp-proxy: a request that is not the proxy's")
    conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + PROTOCOL + b"\r\n\r\n")
    try:
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, start_new_session=True)
    except OSError as e:
        sys.exit("sandboxctl mcp-proxy: %s: %s" % (argv[0], e.strerror or e))

    buf = bytearray(rest)

    def read_exact(n):
        # n bytes of the connection, or None once it ended.
        while len(buf) < n:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            buf.extend(chunk)
        data = bytes(buf[:n])
        del buf[:n]
        return data

    def to_command():
        # Frames of stdin until the one of length 0 (the end of stdin) or
        # the end of the connection (the client went).
        try:
            while True:
                head = read_exact(4)
                if head is None:
                    break
                n = int.from_bytes(head, "big")
                if n == 0:
                    close_stdin()
                    # Only the end of the connection may follow.
                    while conn.recv(65536):
                        pass
                    break
                data = read_exact(n) if n <= MAX_FRAME else None
                if data is None:
                    break
                view = memoryview(data)
                while view:
                    view = view[p.stdin.write(view):]
        except OSError:
            pass
        close_stdin()
        # The client went: give the command a moment to end on its own.
        try:
            p.wait(STOP_GRACE)
        except subprocess.TimeoutExpired:
            stop(p)

    def close_stdin():
        try:
            p.stdin.close()
        except OSError:
            pass

    def from_command():
        try:
            while True:
                chunk = p.stdout.read(65536)
                if not chunk:
                    break
                conn.sendall(chunk)
        except OSError:
            pass
        try:
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    t = threading.Thread(target=to_command, daemon=True)
    t.start()
    from_command()
    code = p.wait()
    conn.close()
    sys.exit(code if code >= 0 else 128 - code)


def stop(p):
    for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, None)):
        try:
            os.killpg(p.pid, sig)
        except OSError:
            return
        try:
            p.wait(wait)
            return
        except subprocess.TimeoutExpired:
            pass


main()
