#!/usr/bin/env python3
"""Load for the committed profiles (docs/profiles/README.md): drives one
sandboxd over its socket while a profiler watches it.

  load.py SOCKET cold N         N cold creates back to back (the daemon runs
                                pool_size = 0), each deleted afterwards
  load.py SOCKET pooled N       N pooled creates paced at 5/s, each deleted
                                after its answer (the pool refills between)
  load.py SOCKET burst N        N bursts of 20 creates at once, each after the
                                pool is full and 2 s idle (the first burst,
                                which raises the pool's depth, is not timed)
  load.py SOCKET many N         N more idle sessions (disk_mb 64), made by 4
                                threads, kept: the rate of each hundred
  load.py SOCKET clean          delete every session
  load.py SOCKET exec N         N executions of x = 1 on one session
  load.py SOCKET list N         N lists of every session, back to back (with
                                JSON decoding, as a client would)
  load.py SOCKET memory N       N idle sessions: their mean PSS, and where
                                one session's memory lies (smaps)

It prints the latencies it saw and, for creates, the CPU time the whole
host spent on each (all cores, from /proc) and the mean of each step of a
create from the daemon's step timers (sandboxd_session_create_phase_seconds
in its /metrics): which step holds the time.
"""
import http.client
import json
import os
import socket
import sys
import threading
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


def create_phases(conn):
    """The daemon's create step timers: {(source, phase): (sum s, count)}."""
    conn.request("GET", "/metrics")
    r = conn.getresponse()
    out = {}
    for line in r.read().decode().splitlines():
        if not line.startswith("sandboxd_session_create_phase_seconds_"):
            continue
        name, value = line.rsplit(" ", 1)
        kind = name[len("sandboxd_session_create_phase_seconds_"):].split("{")[0]
        if kind not in ("sum", "count"):
            continue
        labels = dict(kv.split("=", 1) for kv in name[name.index("{") + 1:-1].split(","))
        key = (labels["source"].strip('"'), labels["phase"].strip('"'))
        sums = out.setdefault(key, [0.0, 0])
        sums[0 if kind == "sum" else 1] = float(value)
    return out


def print_phases(before, after):
    """The mean of each create step between two create_phases readings."""
    rows = []
    for key, (s, n) in sorted(after.items()):
        s0, n0 = before.get(key, (0.0, 0))
        if n > n0:
            rows.append("%s %s %.2f ms (n %d)" % (key[0], key[1], (s - s0) * 1e3 / (n - n0), n - n0))
    print("create steps, mean: " + "; ".join(rows))


def wait_pool_full(conn):
    while True:
        p = call(conn, "GET", "/v1/info")["pool"]
        if p["idle"] >= max(p["size"], p["target"]):
            return
        time.sleep(0.005)


def burst(sock, size):
    """size creates at once, each on a connection of its own: their
    latencies and ids."""
    lat, ids = [0.0] * size, [None] * size
    go = threading.Event()

    def one(i):
        c = Conn(sock)
        c.connect()
        go.wait()
        t = time.perf_counter()
        ids[i] = call(c, "POST", "/v1/sessions", {})["id"]
        lat[i] = time.perf_counter() - t
        c.close()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(size)]
    for t in threads:
        t.start()
    time.sleep(0.05)  # every thread connected and waiting
    go.set()
    for t in threads:
        t.join()
    return lat, ids


def many(sock, n):
    """n idle sessions made by 4 threads, each on a connection of its own;
    prints how many a second each hundred took."""
    lock = threading.Lock()
    left, done = [n], [0]
    t0 = [time.perf_counter()]

    def one():
        c = Conn(sock)
        while True:
            with lock:
                if left[0] == 0:
                    return
                left[0] -= 1
            call(c, "POST", "/v1/sessions", {"disk_mb": 64})
            with lock:
                done[0] += 1
                if done[0] % 100 == 0:
                    now = time.perf_counter()
                    print("sessions %d-%d of this run: %.1f/s" % (done[0] - 100, done[0], 100 / (now - t0[0])), flush=True)
                    t0[0] = now
    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


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
    sock, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 0
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
    elif mode == "burst":
        phases = None
        for round in range(n + 1):
            wait_pool_full(conn)
            time.sleep(2)
            if round == 1:
                phases = create_phases(conn)
            l, ids = burst(sock, 20)
            if round > 0:
                lat += l
            for sid in ids:
                call(conn, "DELETE", "/v1/sessions/" + sid)
        print_phases(phases, create_phases(conn))
    elif mode in ("cold", "pooled"):
        phases = create_phases(conn)
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
        print_phases(phases, create_phases(conn))
    elif mode == "list":
        count = len(call(conn, "GET", "/v1/sessions")["sessions"])
        for _ in range(n):
            t = time.perf_counter()
            call(conn, "GET", "/v1/sessions")
            lat.append(time.perf_counter() - t)
        print("%d sessions listed" % count)
    elif mode == "memory":
        return memory(conn, n)
    elif mode == "many":
        return many(sock, n)
    elif mode == "clean":
        for sess in call(conn, "GET", "/v1/sessions")["sessions"]:
            call(conn, "DELETE", "/v1/sessions/" + sess["id"])
        return
    else:
        sys.exit("mode: cold, pooled, burst, many, clean, exec, list or memory")
    print("%s: n %d p50 %.2f ms p90 %.2f ms p99 %.2f ms" % (mode, len(lat), pct(lat, .5), pct(lat, .9), pct(lat, .99)))


if __name__ == "__main__":
    main()
