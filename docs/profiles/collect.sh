#!/usr/bin/env bash
# collect.sh [SANDBOXD] [OUT] [RUNSC]: makes the profiles of docs/profiles anew, as
# root, on a quiet host: the daemon's CPU profile (pprof, from its socket)
# under cold creates, paced pooled creates, bursts of creates,
# executions and lists of 1000 sessions, and whole-host perf profiles of
# cold creates, of executions (runc's, and runsc's on systrap) and of many
# sessions made (what runc init, python, gVisor and the kernel cost, which
# the daemon's own profile cannot show). Needs curl and perf (linux-perf).
# SANDBOXD must not live under /tmp/sbd-profile-*: runc seals its binary
# with an overlay whose lower folders may not overlap the daemon's run
# dir. RUNSC is a gVisor new enough for systrap (make dist/runsc/runsc;
# Debian 12's has only ptrace).
set -euo pipefail
bin=$(realpath "${1:-bin/sandboxd}")
out=$(realpath "${2:-docs/profiles}")
runsc=$(realpath -m "${3:-dist/runsc/runsc}")
[ -x "$runsc" ] || { echo "collect.sh: no runsc at $runsc: make dist/runsc/runsc builds one" >&2; exit 1; }
here=$(dirname "$(realpath "$0")")
dir=$(mktemp -d /tmp/sbd-profile-XXXXXX)
chmod 755 "$dir" # sandboxes' root (nobody on the host) reaches their folders
pid=
stop() {
	[ -z "$pid" ] || { kill "$pid" && wait "$pid"; } 2>/dev/null || true
	pid=
}
trap 'stop; rm -rf "$dir"' EXIT

# start POOL_SIZE [POOL_MAX_SIZE [CONFIG]]: a daemon of its own, its pool
# full; CONFIG is more of its config's lines.
start() {
	stop
	rm -rf "$dir/data" "$dir/run"
	printf 'pool_size = %d\npool_max_size = %d\nmax_sessions = 1100\nmax_sessions_per_uid = 1100\n%s\n' "$1" "${2:-$1}" "${3:-}" >"$dir/config.toml"
	"$bin" --config "$dir/config.toml" --socket "$dir/s.sock" --data-dir "$dir/data" \
		--run-dir "$dir/run" --log-level warn 2>>"$dir/daemon.log" &
	pid=$!
	until curl -sf --unix-socket "$dir/s.sock" http://d/v1/health >/dev/null; do sleep 0.1; done
	sleep 5
}

# cpu NAME SECONDS MODE N: the daemon's CPU profile while load.py runs.
cpu() {
	curl -sf --unix-socket "$dir/s.sock" "http://d/debug/pprof/profile?seconds=$2" -o "$out/$1.cpu.pb.gz" &
	local c=$!
	python3 "$here/load.py" "$dir/s.sock" "$3" "$4" | tee "$out/$1.load.txt"
	wait "$c"
}

start 0
python3 "$here/load.py" "$dir/s.sock" memory 20 | tee "$out/idle-session.memory.txt"
cpu cold-create 8 cold 150
# host NAME MODE N: the whole host while load.py runs, into NAME.host.txt:
# what the load saw, CPU by program and object, then the hottest functions.
host() {
	perf record -q -e cpu-clock -a -g -o "$dir/perf.data" -- python3 "$here/load.py" "$dir/s.sock" "$2" "$3" >"$dir/perf-load.txt"
	{
		cat "$dir/perf-load.txt"
		echo
		echo "# CPU by program and object (perf report --sort comm,dso)"
		perf report -i "$dir/perf.data" --stdio --no-children --sort comm,dso -g none 2>/dev/null | awk '!/^#/ && NF && n++ < 40'
		echo
		echo "# the hottest functions (perf report --sort comm,sym)"
		perf report -i "$dir/perf.data" --stdio --no-children --sort comm,sym -g none 2>/dev/null | awk '!/^#/ && NF && n++ < 50'
	} >"$out/$1.host.txt"
}
host cold-create cold 100
start 2
cpu pooled-create 12 pooled 60
cpu exec 6 exec 8000
# Executions on the whole host: the daemon, the client, and in the
# sandbox the native supervisor's hop and the worker; then the same under
# runsc (systrap), where each of the hop's system calls is the Sentry's.
host exec exec 4000
start 1 1 "default_runtime = \"runsc\"
[runsc]
path = \"$runsc\"
platform = \"systrap\""
host runsc-exec exec 2000
# Bursts of 20 after idle: the pool's depth follows the demand, as in
# make bench's pooled daemon.
start 2 24
cpu burst-create 30 burst 6
# Many idle sessions: the whole host while the daemon makes sessions 1 to
# 100, then while it makes 501 to 600 (what a create costs more when 500
# are held).
start 0
perf record -q -e cpu-clock -a -g -o "$dir/perf-few.data" -- python3 "$here/load.py" "$dir/s.sock" many 100 >"$dir/many.txt"
python3 "$here/load.py" "$dir/s.sock" many 400 >>"$dir/many.txt"
perf record -q -e cpu-clock -a -g -o "$dir/perf-many.data" -- python3 "$here/load.py" "$dir/s.sock" many 100 >>"$dir/many.txt"
# A list of 1000 sessions, as make bench's: the daemon's CPU.
python3 "$here/load.py" "$dir/s.sock" many 400 >>"$dir/many.txt"
cpu list-sessions 10 list 300
python3 "$here/load.py" "$dir/s.sock" clean
{
	cat "$dir/many.txt"
	for run in few many; do
		echo
		echo "# $run: CPU by program (perf report --sort comm), then the hottest functions (--sort sym)"
		perf report -i "$dir/perf-$run.data" --stdio --no-children --sort comm -g none 2>/dev/null | awk '!/^#/ && NF && n++ < 12'
		perf report -i "$dir/perf-$run.data" --stdio --no-children --sort sym -g none 2>/dev/null | awk '!/^#/ && NF && n++ < 30'
	done
} >"$out/many-sessions.host.txt"
echo "profiles in $out"
