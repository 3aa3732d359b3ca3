# sandboxd agent: the supervisor's processes. As PID 1 of the sandbox the
# supervisor inherits every orphan, and a zombie counts against the
# sandbox's pids limit until it is reaped: the reaper (SIGCHLD) reaps every
# child at once, whatever the supervisor is doing, and keeps the wait status
# of the children it watches (the worker, a shell command) for the code
# that waits for them. Nothing else calls waitpid(-1).
#
# An execution stopped by its timeout or an interrupt stops with everything
# it started: processes that called setsid or were forked twice leave its
# process group, so the supervisor notes the sandbox's processes before it
# runs (pid and start time; it notes them while idle, once the previous
# execution's answer is out) and, once it stopped it, kills every process
# that was not there (only one execution runs at a time). Processes that
# older processes start meanwhile are the execution's too: a server left by
# an earlier one and the children it forks now go with it.
import _signal as signal
import _thread
import os
import time

from _sandboxd_wire import log

# WATCHED: pids whose wait status the supervisor wants; EXITED: those
# statuses, once reaped. While SPAWNING, between a fork and the pid being
# watched, every status is kept (a child may end before its parent learns
# its pid).
WATCHED = set()
EXITED = {}
SPAWNING = [False]
# LOCK is held from a reap to its status kept, and from a fork to its pid
# watched: the spawner's thread (_sandboxd_spawn) reaps and forks too.
# Reentrant: the handler may run while the main thread holds it.
LOCK = _thread.RLock()


def reap_zombies(*_):
    """Reaps every exited child; the SIGCHLD handler."""
    with LOCK:
        while True:
            try:
                p, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            except InterruptedError:
                continue
            if p == 0:
                return
            if p in WATCHED or SPAWNING[0]:
                EXITED[p] = st


def start_reaper():
    signal.signal(signal.SIGCHLD, reap_zombies)
    reap_zombies()


def stop_reaper():
    """In a forked child that is not the supervisor (the worker): its
    children are user code's, which waits for them itself. The lock may
    have been the spawner's, a thread the child does not have, and
    signals no longer wake that thread."""
    global LOCK
    LOCK = _thread.RLock()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    try:
        signal.set_wakeup_fd(-1)
    except ValueError:
        pass


def spawning():
    """Before a fork whose pid will be watched."""
    SPAWNING[0] = True


def watch(pid):
    """After the fork: pid's status is kept once it exits."""
    with LOCK:
        WATCHED.add(pid)
        SPAWNING[0] = False
        # The reaper is SIGCHLD's handler, which runs on this thread
        # between any two bytecodes, and LOCK is reentrant: it may add to
        # EXITED during a loop over it. list() copies the keys in one
        # step, before the loop.
        for p in list(EXITED):
            if p not in WATCHED:
                EXITED.pop(p, None)


def unwatch(pid):
    with LOCK:
        WATCHED.discard(pid)
        EXITED.pop(pid, None)


def child_status(pid):
    """pid's wait status if it has exited (reaping it), else None."""
    with LOCK:
        st = EXITED.get(pid)
        if st is not None:
            return st
        try:
            p, st = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            # The reaper took it meanwhile (and kept its status if watched).
            return EXITED.get(pid, 0)
        if p != pid:
            return None
        EXITED[pid] = st
        return st


def reap(pid, limit=5.0):
    """Waits for pid (bounded): its wait status, or None."""
    deadline = time.monotonic() + limit
    while True:
        st = child_status(pid)
        if st is not None or time.monotonic() >= deadline:
            return st
        time.sleep(0.005)


def reap_all(limit=5.0):
    """After kill(-1): waits (bounded) until no child is left, so the next
    execution starts in a sandbox with nothing of the last one."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        with LOCK:
            try:
                p, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if p in WATCHED:
                EXITED[p] = st
        if p == 0:
            time.sleep(0.002)


def kill_all():
    """Kills every process of the sandbox but PID 1; returns whether it
    did. As PID 1 of the sandbox's pid namespace, kill(-1) reaches every
    other process in it and none outside. Anywhere else kill(-1) would reach
    every process of the uid, or of the whole host for root: it is refused."""
    if os.getpid() != 1:
        log("not PID 1 of a pid namespace: refusing to kill every process (kill(-1))")
        return False
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass
    return True


def signal_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except OSError:
        pass


def wait_group_gone(pgid, limit=2.0):
    """After killpg: waits (bounded) until the group's processes are gone."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        reap_zombies()
        try:
            os.killpg(pgid, 0)
        except OSError:
            return
        time.sleep(0.002)


def stat(pid):
    """pid's state letter and start time (bytes), or None once gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: the fields that
    # follow start after the last ")". State is field 3, starttime 22.
    fields = data[data.rfind(b")") + 2:].split()
    if len(fields) < 20:
        return None
    return fields[0], fields[19]


def snapshot(prev=None):
    """The sandbox's processes, as a map of pid to start time, for kill_new;
    None when this is not PID 1 of a pid namespace (/proc would show the
    host's, which are not the supervisor's to kill). prev, an earlier
    snapshot, spares reading the stat of every process it has: a pid still
    there is taken for the same process. It could be another only if pids
    wrapped around in between, and kill_new then finds another start time
    and takes it for new: a mistake can kill, never spare."""
    if os.getpid() != 1:
        return None
    prev = prev or {}
    seen = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            pid = int(name)
            start = prev.get(pid)
            if start is None:
                st = stat(pid)
                if st is None:
                    continue
                start = st[1]
            seen[pid] = start
    return seen


def kill_new(before, spare=(), limit=2.0):
    """Kills every process that started since snapshot before, but those
    in spare, and returns once none is left or limit has passed. Zombies
    are left to the reaper (or their parent).

    It stops them first, then kills them. A fork bomb forks on while the
    passes over /proc run: a killed process frees its pid for a survivor's
    next fork, and under gVisor (slow /proc, kill and fork not ordered)
    the bomb could outrun the passes and live on after its execution (CI,
    under load). A stopped process forks no more and keeps its pid, so the
    pids limit soon leaves the bomb no room: once a pass finds nothing new
    that was not sent SIGSTOP, every new process is killed."""
    if before is None:
        return
    deadline = time.monotonic() + limit
    stopped = set()
    while _signal_new(before, spare, signal.SIGSTOP, stopped) and time.monotonic() < deadline:
        reap_zombies()
    while _signal_new(before, spare, signal.SIGKILL) and time.monotonic() < deadline:
        time.sleep(0.002)
        reap_zombies()


def _signal_new(before, spare, sig, sent=None):
    """Sends sig to every live process that started since snapshot before,
    but PID 1, those in spare and those in sent (pid and start time, which
    it adds to); returns whether it sent any."""
    any_sent = False
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        if pid == 1 or pid in spare:
            continue
        st = stat(pid)
        if st is None or st[0] == b"Z" or before.get(pid) == st[1]:
            continue
        if sent is not None:
            if (pid, st[1]) in sent:
                continue
            sent.add((pid, st[1]))
        try:
            os.kill(pid, sig)
            any_sent = True
        except OSError:
            pass
    return any_sent


def kill_largest():
    """Kills the sandbox's process with the most resident memory, but PID 1,
    as the kernel's OOM killer would pick it; returns its pid, or None. The
    daemon asks for it when the sandbox reaches its memory limit where no
    kernel does it: gVisor keeps none inside (protocol 6)."""
    if os.getpid() != 1:
        return None
    best, most = None, -1
    for name in os.listdir("/proc"):
        if not name.isdigit() or name == "1":
            continue
        try:
            with open("/proc/%s/statm" % name, "rb") as f:
                rss = int(f.read().split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if rss > most:
            best, most = int(name), rss
    if best is not None:
        try:
            os.kill(best, signal.SIGKILL)
        except OSError:
            return None
        log("memory limit reached: killed pid %d (%d KiB resident)" % (best, most * os.sysconf("SC_PAGE_SIZE") // 1024))
    return best
