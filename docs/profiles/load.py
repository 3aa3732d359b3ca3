#!/usr/bin/env python3
"""Load for the committed profiles (docs/profiles/README.md): drives one
sandboxd over its socket while a profiler watches it.

  load.py SOCKET cold N         N cold creates back to back (the daemon runs
                                pool_size = 0), each deleted afterwards
  load.py SOCKET pooled N       N pooled creates paced at 5/s, each deleted
                                after its answer (the pool refills between)
  load.py SOCKET exec N         N executions of x = 1 on one session
  load.py SOCKET memory N       N idle sessions: their mean PSS, and where
                                one session's memory lies (smaps)

It prints the latencies it saw and, for creates, the CPU time the daemon
and the whole host spent on each (all cores, from /proc).
"""
import http.client
import json
import os
import socket
import sys
import time


class Conn(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("sandboxd")
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(self.path)


def call(conn, method, path, body=None):
    conn.request(method, path, body=None if body is None else json.dumps(body),
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    if r.status >= 300:
        sys.exit("%s %s: %d %s" % (method, path, r.status, data.decode()))
    return json.loads(data) if data else None


def host_cpu_s():
    v = [int(x) for x in open("/proc/stat").readline().split()[1:9]]
    return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def pct(l, p):
    l = sorted(l)
    return l[min(len(l) - 1, int(len(l) * p))] * 1e3


def session_pids(sid):
    """The processes whose cgroup is the session's."""
    pids = []
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and sid in open("/proc/%s/cgroup" % p).read():
                pids.append(int(p))
        except OSError:
            pass
    return sorted(pids)


def smaps(pid):
    """Per mapping: (anonymous, private dirty, shared dirty, pss) in kB."""
    rows, cur = {}, None
    for line in open("/proc/%d/smaps" % pid):
        f = line.split()
        if "-" in f[0] and not f[0].endswith(":"):
            cur = f[5] if len(f) > 5 else "[anon]"
            rows.setdefault(cur, [0, 0, 0, 0])
        elif f[0] in ("Anonymous:", "Private_Dirty:", "Shared_Dirty:", "Pss:"):
            rows[cur][("Anonymous:", "Private_Dirty:", "Shared_Dirty:", "Pss:").index(f[0])] += int(f[1])
    return rows


def memory(conn, n):
    ids = [call(conn, "POST", "/v1/sessions", {"disk_mb": 64})["id"] for _ in range(n)]
    time.sleep(3)
    total = 0
    for sid in ids:
        for pid in session_pids(sid):
            total += sum(r[3] for r in smaps(pid).values())
    print("idle session PSS, mean of %d: %.2f MiB" % (n, total / n / 1024))
    for pid in session_pids(ids[0]):
        cmd = open("/proc/%d/cmdline" % pid).read().replace("\0", " ")[:60]
        print("\npid %d (%s): anonymous, private dirty, shared dirty, PSS (kB) by mapping" % (pid, cmd))
        rows = sorted(smaps(pid).items(), key=lambda kv: -kv[1][3])
        for name, r in rows[:8]:
            print("  %6d %6d %6d %6d  %s" % (r[0], r[1], r[2], r[3], name))
    for sid in ids:
        call(conn, "DELETE", "/v1/sessions/" + sid)


def main():
    sock, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    conn = Conn(sock)
    lat = []
    if mode == "exec":
        sid = call(conn, "POST", "/v1/sessions", {})["id"]
        req = {"language": "python", "code": "x = 1"}
        for _ in range(50):
            call(conn, "POST", "/v1/sessions/%s/exec" % sid, req)
        for _ in range(n):
            t = time.perf_counter()
            call(conn, "POST", "/v1/sessions/%s/exec" % sid, req)
            lat.append(time.perf_counter() - t)
        call(conn, "DELETE", "/v1/sessions/" + sid)
    elif mode in ("cold", "pooled"):
        cpu0, t0 = host_cpu_s(), time.perf_counter()
        for _ in range(n):
            t = time.perf_counter()
            sid = call(conn, "POST", "/v1/sessions", {})["id"]
            lat.append(time.perf_counter() - t)
            call(conn, "DELETE", "/v1/sessions/" + sid)
            if mode == "pooled":
                time.sleep(max(0, 0.2 - (time.perf_counter() - t)))
        cpu = host_cpu_s() - cpu0
        print("host CPU %.1f ms a create (with its delete), wall %.1f ms" % (cpu * 1e3 / n, (time.perf_counter() - t0) * 1e3 / n))
    elif mode == "memory":
        return memory(conn, n)
    else:
        sys.exit("mode: cold, pooled, exec or memory")
    print("%s: n %d p50 %.2f ms p90 %.2f ms p99 %.2f ms" % (mode, n, pct(lat, .5), pct(lat, .9), pct(lat, .99)))


if __name__ == "__main__":
    main()
