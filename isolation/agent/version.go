package agent

import "errors"

// ProtocolVersion is the wire this daemon's agent speaks, told by its
// pong ("protocol"). Sessions outlive daemon upgrades, so a daemon meets
// agents that older daemons started, and an agent may meet a downgraded
// daemon, which refuses a protocol newer than its own. So the protocol
// changes only when the daemon can see a difference (a request, an
// answer, a line, where the agent listens); a change to the agent's files
// that no daemon can see bumps Revision alone, and every daemon of the
// same protocol keeps speaking to it.
//
// Up to 12 every change bumped the protocol, so the values of agents in
// the wild are 1 to 12; the wires among them are fewer, each named for
// its first version, which is what the Conn tests (interruptVersion and
// the like):
//
//	wire  versions  what the daemon sees
//	1     1, 2      pings and executions (2's pong says "protocol")
//	3     3         interrupt
//	4     4         max_answer, truncated
//	5     5         the agent listens at ListenPath without a listener
//	6     6-8       reclaim
//	9     9-14      display lines and bundles
//	15    15        contexts
//	16    16        processes started by the agent (spawn.go)
//	17    17        undo checkpoints (undo.go)
//
// testdata keeps the last version of each older wire (agent-v2, -v3,
// -v4, -v5, -v8, -v12, -v15, -v16; agent-v1 as the one that says no protocol) and today's
// Conn is tested against each (TestAgentContract); the current wire is
// the current files.
//
// Versions:
//
//	1  the agent up to commit 4f81208: one module; the pong has no
//	   "protocol".
//	2  modules split by process; constants generated from Go; the pong
//	   says "protocol"; kill(-1) refused unless the agent is PID 1 of its
//	   pid namespace. Requests and answers are otherwise those of 1, so
//	   the Conn speaks to both alike.
//	3  the supervisor reads the daemon's socket while an execution runs:
//	   {"op":"interrupt","id":ID} interrupts execution ID (SIGINT to its
//	   process group, the kill after its grace: what a Python timeout
//	   does), and its done says status "interrupted", exit code 130. The
//	   interrupt has no answer of its own: one for an ID that is not the
//	   running execution's (it ended meanwhile), or while nothing runs,
//	   is dropped, and a second one changes nothing. Any other request
//	   during an execution is answered with an error line. The worker
//	   ignores SIGINT outside cells and says when a cell begins, and the
//	   supervisor signals no sooner: an interrupt neither kills an idle
//	   interpreter nor is lost before the cell runs. Pings and executions
//	   are those of 2; Conn.Interrupt refuses agents before 3 with
//	   ErrUnsupported.
//	4  exec takes "max_answer": the whole answer (stdout, stderr, error,
//	   result, outputs) is bounded and "truncated" says when anything
//	   was cut (a result cut at max_output says so too). The supervisor
//	   reaps every child at once (SIGCHLD), so zombies never fill the
//	   pids limit; an execution stopped by its timeout or an interrupt
//	   stops with every process it started (setsid, double forks); a
//	   request the agent fails on (a NUL in a path) is answered with an
//	   error line instead of ending the sandbox. Requests and answers
//	   are otherwise those of 3.
//	5  without an inherited listener on ListenFD (gVisor passes none), the
//	   agent listens at ListenPath, a folder the host binds in. Requests
//	   and answers are those of 4.
//	6  {"op":"reclaim"} kills the sandbox's process with the most resident
//	   memory but PID 1, while an execution runs or not, and is not
//	   answered: the daemon's OOM kill for runsc sandboxes, whose memory
//	   limit no kernel enforces inside. Conn.Reclaim refuses agents before
//	   6 with ErrUnsupported. Everything else is as in 5.
//	7  fewer system calls on an execution's path (each a trap under
//	   gVisor): the worker no longer says a cell began. SIGINT outside a
//	   cell is kept for the next one, which stops before its code runs,
//	   so the supervisor signals at once, and clears a signal that came
//	   too late with a noop request after every cell it signalled. The
//	   processes an execution's stop spares are noted while idle, after
//	   the last answer went out; the request's token comes from a pool;
//	   output written before the reply is read in the reply's round;
//	   the worker's fds 1 and 2 are put back after its reply. Requests
//	   and answers are those of 6.
//	8  a stop repeats its SIGINT, which Python can sleep through (one
//	   landing just before a blocking call waits for the call to end):
//	   to the worker every 0.2 s until the cell ends, the worker raising
//	   KeyboardInterrupt once per cell; to a shell command once more
//	   after a second. Requests and answers are those of 7.
//	9  rich display: the cells' builtin display() and the last
//	   expression make Jupyter-style MIME bundles (_repr_html_ and the
//	   like, _repr_mimebundle_): an output may have a "bundle"; what
//	   display() shows is sent as it is made, a {"type":"display",
//	   "output":{...}} line among stdout and stderr, and the done's
//	   outputs are the others (the last expression's, then the figures).
//	   The Conn hands displays to its onDisplay; agents before 9 send
//	   none, and are otherwise the same.
//	10 an idle agent holds less memory: the supervisor sets itself
//	   non-dumpable through _ctypes (not the ctypes package), freezes
//	   its objects out of the collector's reach before it forks the
//	   worker, and the worker imports linecache only when something
//	   needs it (the cells' sources wait for it). Requests and answers
//	   are those of 9.
//	11 a stopped execution's processes are stopped (SIGSTOP) before they
//	   are killed, and a timed-out command's at once, not after its
//	   wait: a fork bomb under gVisor outran the kill passes and lived
//	   on. Requests and answers are those of 9.
//	12 a killed command's escapees are killed once, at the kill (11 went
//	   over the processes again after the command's group had gone,
//	   finding nothing). Requests and answers are those of 9.
//	13 (revision only; protocol 12) the supervisor is split by job: the
//	   daemon's connection (_sandboxd_daemon), Python executions
//	   (_sandboxd_cells), shell executions (_sandboxd_shell) and the
//	   answer's bounds (_sandboxd_answer) leave _sandboxd_agent, which
//	   answers the requests. Nothing a process does changes.
//	14 (revision only; protocol 12) a shell command that exits at once
//	   keeps its exit code: it is watched before the fork's window ends,
//	   so the reaper keeps its status (it said 0 when the reaper took
//	   the command between Popen and the watch, a race seen under load).
//	15 contexts: {"op":"context","action":"start"|"delete","context":N,
//	   "cwd":D} starts (afresh) or deletes a worker interpreter of its
//	   own (with "from":F, a copy of context F's, forked by F's worker,
//	   which passes the supervisor the copy's pipes over its fork channel,
//	   a socket pair every worker now gets), answered by
//	   {"type":"context","context":N,"pid":P}; an exec
//	   names its "context" (and "context_cwd", where a new sandbox starts
//	   it), and its state_reset says when the context had to be started
//	   anew. A reset of one worker kills only its process group while
//	   other contexts live. Conn.Context and an Exec with a context
//	   refuse agents before 15 with ErrUnsupported.
//	   Executions also start where the runtime started the agent (the
//	   user's home: /workspace, or a template user's), not in /workspace
//	   always, and a shell command without a cwd in the interpreter's.
//	16 the agent starts processes for the daemon: a second listener
//	   (SpawnFD, made by the daemon; else SpawnPath), served by a thread
//	   of the supervisor, takes one connection a process, {"argv","env",
//	   "cwd"} with its stdin, stdout and stderr as SCM_RIGHTS, answers
//	   {"pid"} (or {"error"}), takes {"signal"} lines and says {"exit"}
//	   at its end (see _sandboxd_spawn). The reaper shares a lock with
//	   that thread. The daemon's requests and answers are those of 15;
//	   before 16 the runtime starts every process (Sandbox.Spawn). A
//	   shell execution whose output has closed polls for its command's
//	   end from 1 ms up (it waited up to 50 ms).
//	17 undo checkpoints: an exec of a Python cell with "checkpoints":K
//	   (1 to 16) first has the context's worker fork a copy of itself
//	   (as a "from" copy), which the supervisor stops (SIGSTOP) and
//	   parks, keeping the context's newest K; its done says
//	   "checkpoint": true (absent for K 0, shell, JavaScript: node does
//	   not fork, and a fork that failed, which is logged and fails
//	   nothing). {"op":"undo","context":C,"steps":N} wakes (SIGCONT) C's
//	   N-th newest parked copy as its worker and kills the current one
//	   and the newer copies: {"type":"undone","context":C,"undone":N,
//	   "pid":P}, or an error "context C keeps M checkpoints" and nothing
//	   changes. A parked copy costs the pages its worker wrote since, in
//	   the sandbox's memory; an execution's stop spares it, a reset
//	   kills only the worker's group while one is parked, and a context's
//	   start or delete kills them. Conn.Undo refuses agents before 17
//	   with ErrUnsupported, and Exec drops their Checkpoints. A shell
//	   execution's stop spares the workers by pid too, not only as
//	   processes older than it, and a worker answers its fork (a "from"
//	   copy's too) once the copy has called setsid: a reset of the
//	   source's group, or the SIGSTOP, found it there before.
//	18 {"op":"quiesce"} readies a gVisor sandbox for runsc checkpoint
//	   (quiesce.go): the agent answers {"type":"quiet"}, closes the
//	   daemon's connection and its listeners, waits on CheckpointPath
//	   (or QuiesceWait) and listens again; a copy restored from the
//	   image reseeds its interpreters' random. Conn.Quiesce refuses
//	   agents before 18 with ErrUnsupported.
//	19 (revision only; protocol 18) the reaper's status map is copied
//	   before a loop over it: SIGCHLD's handler runs on the thread in
//	   the loop (its lock is reentrant) and could add to it, and the
//	   request ended in "dictionary changed size during iteration"
//	   (a shell execution, seen under load).
//	20 (revision only; protocol 18) the worker can be exec'd rather than
//	   forked (_sandboxd_worker.exec_main): by the native supervisor
//	   (supervisor/), which speaks protocol 18 to the daemon.
//
// To change the agent: change its files, bump Revision and record the
// new files' hash in version_test.go (TestAgentSourcesHaveTheirVersion
// says it). If a daemon can see the change, also, before changing the
// files (or from a checkout of the last commit), save the current wire's
// last agent with
//
//	go test ./isolation/agent -run TestSaveAgent -save-agent=$PWD/isolation/agent/testdata/agent-v<ProtocolVersion>
//
// add it to savedProtocols (contract_test.go), set ProtocolVersion to
// Revision, and make the Conn adapt where the wires differ.
const ProtocolVersion = 18

// Revision is the build of the agent's files (Files): it changes with
// every change to them, seen by a daemon or not (ProtocolVersion changes
// only for the former). Up to 12 the two were one number.
const Revision = 20

// MinProtocolVersion is the oldest agent this daemon's Conn still talks
// to correctly; testdata holds every version from it on.
const MinProtocolVersion = 1

// ErrProtocol means the agent speaks a protocol version this daemon does
// not: older than MinProtocolVersion, or newer than ProtocolVersion (a
// downgraded daemon). The sandbox must be restarted with this daemon's
// agent.
var ErrProtocol = errors.New("the sandbox agent speaks a protocol version this daemon does not")
