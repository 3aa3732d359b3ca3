# sandboxd agent: a context copied from another (protocol 15's "from"). The
# supervisor asks the source context's worker to fork itself; the copy
# takes new pipes as its fds 1 and 2 and control pipes, calls setsid (its own process group: a reset kills it
# alone), and serves cells with every global of the source, copied on
# write by the kernel. The source sends the supervisor its ends of the new
# pipes over the fork channel, a Unix socket pair every worker gets at its
# start (FORK_FD in the worker), as SCM_RIGHTS, then replies with the
# copy's pid. Both processes import this module; only the C halves of
# socket are used, as elsewhere in the supervisor.
#
# An undo checkpoint (protocol 17) is the same copy, made before a cell
# runs, which the supervisor stops (SIGSTOP) at once and parks until an
# undo wakes it (SIGCONT) as its context's worker, or it is dropped. Its
# setsid keeps it out of the worker's group, which a reset kills. While
# the source lives the parked copy is its child (a stopped child is not
# reported to its wait, and reap_copies takes it once it is killed); the
# source's end (a reset, an undo) gives it to the supervisor.
import _socket
import os
import sys

# Fds of the new worker's ends, in the order they travel.
FD_NAMES = ("out", "err", "ctrl_r", "ctrl_w", "sock")


def channel():
    """A fork channel: the supervisor's end, the worker's end."""
    return _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)


def socket_of(fd):
    """The supervisor's end of a fork channel received as fd."""
    return _socket.socket(fileno=fd)


def send_fds(chan_fd, fds):
    """Sends fds over the fork channel (the worker's end, chan_fd)."""
    s = _socket.socket(fileno=os.dup(chan_fd))
    try:
        data = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in fds)
        s.sendmsg([b"F"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, data)])
    finally:
        s.close()


def receive_fds(sock, n):
    """The n fds the worker sent over the fork channel (the supervisor's
    end, sock, blocking with a timeout), or raises OSError."""
    _, anc, flags, _ = sock.recvmsg(1, _socket.CMSG_SPACE(4 * n))
    fds = []
    for level, kind, data in anc:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds += [int.from_bytes(data[i:i + 4], sys.byteorder, signed=True) for i in range(0, len(data) - 3, 4)]
    if len(fds) != n or flags & getattr(_socket, "MSG_CTRUNC", 8):
        for fd in fds:
            os.close(fd)
        raise OSError("the worker sent %d fds, not %d" % (len(fds), n))
    return fds


def fork_worker(chan_fd, become):
    """In the source worker, between cells: makes the copy, and sends the
    supervisor its ends over the fork channel chan_fd. Returns the copy's
    pid in the source; in the copy, calls become(fds) with its ends
    (out_w, err_w, req_r, rep_w, chan_w) and returns None.

    One fork, so the copy's page tables are copied once (a fork through an
    intermediate that exits, to make the copy the supervisor's child,
    cost three times as much with 100 MB of state): the copy is the
    source's child while the source lives, which reaps it (reap_copies),
    and the supervisor's, which reaps it, once the source has gone."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    sup, wk = channel()
    mine = (out_w, err_w, req_r, rep_w, wk.fileno())
    theirs = (out_r, err_r, rep_r, req_w, sup.fileno())
    # The source answers once the copy is a session of its own: a reset
    # of the source's group, or a SIGSTOP that parks the copy, must not
    # find it still in the source's group.
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            os.close(ready_r)
            os.write(ready_w, b"s")
            os.close(ready_w)
            COPIES.clear()
            for fd in theirs:
                os.close(fd)
            sup.detach()
            become(mine)
            wk.close()
            for fd in mine[:4]:
                os.close(fd)
            return None
        except BaseException:  # noqa: BLE001 - never back into the source's loop
            os._exit(1)
    COPIES.append(pid)
    os.close(ready_w)
    try:
        os.read(ready_r, 1)  # its byte, or EOF if it died first
    finally:
        os.close(ready_r)
    try:
        send_fds(chan_fd, theirs)
    finally:
        for fd in mine[:4] + theirs[:4]:
            os.close(fd)
        sup.close()
        wk.close()
    return pid


# COPIES: the pids of the copies this worker forked that may still run.
COPIES = []


def reap_copies():
    """Reaps the copies that have ended (zombies, until their parent
    waits). Cheap: most workers have none."""
    for pid in list(COPIES):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid  # user code waited for it
        if done:
            COPIES.remove(pid)
