#!/usr/bin/env bash
# Runs inside the test VM as root: installs sandboxd as a systemd service
# (binaries, units, config) and checks it end to end through sandboxctl as
# a member of group sandboxd. Prints "--- PASS: name" / "--- FAIL: name"
# lines, counted with the Go tests'.
set -u
cd "$(dirname "$0")"
fails=0
pass() { echo "--- PASS: systemd/$1"; }
fail() { echo "--- FAIL: systemd/$1: $2"; fails=$((fails + 1)); }
check() { # name, command...
	local name=$1; shift
	if out=$("$@" 2>&1); then pass "$name"; else fail "$name" "$out"; fi
}
as_alice() { runuser -u alice -- env SANDBOXD_SOCKET=/run/sandboxd/sandboxd.sock "$@"; }

install -m 0755 bin/sandboxd bin/sandboxctl /usr/bin/
install -m 0644 systemd/sandboxd.service systemd/sandboxd.socket /etc/systemd/system/
install -d -m 0755 /etc/sandboxd
install -m 0644 config.toml /etc/sandboxd/config.toml
getent group sandboxd >/dev/null || groupadd --system sandboxd
id alice >/dev/null 2>&1 || useradd --create-home --groups sandboxd alice
systemctl daemon-reload
systemctl enable --now sandboxd.socket >/dev/null 2>&1

check "socket listens, service waits" bash -c '[ "$(systemctl is-active sandboxd.socket)" = active ] && ! systemctl is-active --quiet sandboxd.service && [ "$(stat -c %a:%G /run/sandboxd/sandboxd.sock)" = 660:sandboxd ]'
start=$(date +%s%N)
check "first connection starts the daemon" as_alice sandboxctl info
echo "    socket activation to an answer: $(( ($(date +%s%N) - start) / 1000000 )) ms"
check "unit is active, Type=notify ready" bash -c '[ "$(systemctl show -p ActiveState --value sandboxd)" = active ] && [ "$(systemctl show -p SubState --value sandboxd)" = running ]'
check "status line" bash -c 'systemctl show -p StatusText --value sandboxd | grep -q "sessions running"'
check "watchdog set" timeout 20 bash -c '[ "$(systemctl show -p WatchdogUSec --value sandboxd)" != 0 ]'
pid=$(systemctl show -p MainPID --value sandboxd)
check "daemon in a leaf of its delegated cgroup" bash -c "grep -q '^0::/system.slice/sandboxd.service/daemon$' /proc/$pid/cgroup"

id=$(as_alice sandboxctl create --memory 64M --pids 32 2>&1) || fail "create as a group member" "$id"
check "session owned by alice" bash -c "as_alice() { runuser -u alice -- env SANDBOXD_SOCKET=/run/sandboxd/sandboxd.sock \"\$@\"; }; as_alice sandboxctl inspect $id | grep -q '\"owner_uid\": $(id -u alice)'"
check "sandbox cgroup beside the daemon" test -d "/sys/fs/cgroup/system.slice/sandboxd.service/sandboxes/$id"
check "memory.max is 64M" bash -c "[ \"\$(cat /sys/fs/cgroup/system.slice/sandboxd.service/sandboxes/$id/memory.max)\" = $((64 << 20)) ]"
as_alice sandboxctl exec "$id" -c 'x = 41' >/dev/null
out=$(as_alice sandboxctl exec "$id" -c 'b = bytearray(256 << 20); b[::4096] = b"x" * len(b[::4096])' 2>&1); rc=$?
if [ $rc -eq 137 ]; then pass "memory limit kills"; else fail "memory limit kills" "rc=$rc $out"; fi
out=$(as_alice sandboxctl exec "$id" --shell -c 'for i in $(seq 60); do sleep 5 & done; wait' 2>&1); rc=$?
if echo "$out" | grep -qi "resource temporarily unavailable\|fork\|retry"; then pass "pids limit refuses forks"; else fail "pids limit refuses forks" "rc=$rc $out"; fi
as_alice sandboxctl exec "$id" -c 'x = 41' >/dev/null
check "no systemd variables in the sandbox" bash -c "! runuser -u alice -- env SANDBOXD_SOCKET=/run/sandboxd/sandboxd.sock sandboxctl exec $id --shell -c env | grep -E 'NOTIFY_SOCKET|LISTEN_|WATCHDOG_|INVOCATION_ID|JOURNAL_STREAM'"
check "structured journal fields" bash -c "journalctl -u sandboxd -o json --no-pager | grep -q '\"SESSION\":\"$id\"'"

as_alice sandboxctl exec "$id" --shell -c 'echo kept > /workspace/note' >/dev/null
systemctl restart sandboxd
check "systemctl restart starts a new daemon" bash -c "[ \"\$(systemctl show -p MainPID --value sandboxd)\" != $pid ] && systemctl is-active --quiet sandboxd"
# Live restore over a unit restart needs systemd 254 (DelegateSubgroup=):
# before it, sessions are stopped at shutdown and keep their files.
check "session stopped over the restart, files kept" bash -c "runuser -u alice -- env SANDBOXD_SOCKET=/run/sandboxd/sandboxd.sock sandboxctl inspect $id | grep -q '\"status\": \"stopped\"'"
check "session starts again" as_alice sandboxctl start "$id"
check "its files are there" bash -c "[ \"\$(runuser -u alice -- env SANDBOXD_SOCKET=/run/sandboxd/sandboxd.sock sandboxctl exec $id --shell -c 'cat /workspace/note')\" = kept ]"
systemctl stop sandboxd
check "stopped: no sandbox left in the unit's cgroup" bash -c "[ -z \"\$(find /sys/fs/cgroup/system.slice/sandboxd.service -name cgroup.procs -exec cat {} + 2>/dev/null)\" ]"
check "a connection starts it again" as_alice sandboxctl start "$id"
check "delete" as_alice sandboxctl rm "$id"
systemctl disable --now sandboxd.socket sandboxd.service >/dev/null 2>&1
check "no sandbox cgroup left" bash -c "[ -z \"\$(find /sys/fs/cgroup/system.slice -path '*sandboxes/*' -type d 2>/dev/null)\" ]"
if [ $fails -gt 0 ]; then
	systemctl status --no-pager sandboxd.service | head -20
	journalctl -u sandboxd --no-pager -o cat | tail -40
fi
echo "systemd tests: $fails failed"
[ $fails -eq 0 ]
