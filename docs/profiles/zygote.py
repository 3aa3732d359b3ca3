# A measured prototype of issue 34's moonshot, not shipped: one preloaded
# interpreter (the worker's imports and site) forked into fresh namespaces
# per "session", in place of an interpreter started per session. It prints
# the cost of a fork and the children's memory, after one cell each.
#
#   sudo /usr/bin/python3 -S docs/profiles/zygote.py AGENT_DIR [N [freeze|plain]]
#
# AGENT_DIR holds the agent's modules as a sandbox sees them (a daemon's
# RUN_DIR/state-*/etc/sandboxd). CELL (environment) is the code each child
# runs before it idles: "x = 1" by default. freeze: the zygote moves its
# objects out of the garbage collector's reach (gc.freeze) before forking,
# so that a child's collections do not write to the pages it shares.
#
# What it leaves out (docs/performance.md says what a real one would need):
# the child's pid namespace (a second fork), its root filesystem, cgroup,
# id map, seccomp filter and capabilities; each of those is a system call or
# a few after the fork, no memory.
import ctypes
import gc
import os
import site
import sys
import time

agent_dir = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 20
mode = sys.argv[3] if len(sys.argv) > 3 else "freeze"
sys.path.insert(0, agent_dir)
if sys.flags.no_site:
    site.main()  # as the worker does
import _sandboxd_cells  # noqa: E402,F401  the worker's imports
import _sandboxd_worker  # noqa: E402,F401

libc = ctypes.CDLL(None, use_errno=True)
NEW_NAMESPACES = 0x10000000 | 0x00020000 | 0x40000000 | 0x08000000 | 0x04000000  # user, mount, net, ipc, uts
cell = compile(os.environ.get("CELL", "x = 1"), "<cell>", "exec")


def rollup(pid, field):
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


if mode == "freeze":
    gc.collect()
    gc.freeze()
kids = []
start = time.perf_counter()
for _ in range(n):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        if libc.unshare(NEW_NAMESPACES) != 0:
            os._exit(3)
        exec(cell, {})
        gc.collect()  # as a session's interpreter does, sooner or later
        os.write(w, b"1")
        os.close(w)
        time.sleep(600)
        os._exit(0)
    os.close(w)
    ready = os.read(r, 1)
    os.close(r)
    kids.append(pid)
    if ready != b"1":
        sys.exit("a child failed (unshare needs root)")
each = (time.perf_counter() - start) / n * 1000
time.sleep(1)
try:
    print("%s, %d children: fork + unshare + cell %.2f ms each; zygote PSS %.2f MiB; "
          "a child's PSS %.2f MiB (private dirty %.2f MiB), mean" % (
              mode, n, each, rollup(os.getpid(), "Pss"),
              sum(rollup(k, "Pss") for k in kids) / n,
              sum(rollup(k, "Private_Dirty") for k in kids) / n))
finally:
    for k in kids:
        os.kill(k, 9)
        os.waitpid(k, 0)
