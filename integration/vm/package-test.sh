#!/usr/bin/env bash
# Runs inside the test VM (Debian 12, systemd, pure cgroup v2) as root: the
# life of the sandboxd package. Installs the .deb (pkg/old.deb), checks the
# service it starts, uses it through sandboxctl as a member of group
# sandboxd, restarts and upgrades (pkg/new.deb) with a session running,
# removes and purges, and checks nothing is left but the system group
# sandboxd (kept on purge: see packaging/deb/postrm); then an install
# under a policy-rc.d that forbids starting, which takes that group back.
# The E2B gateway's unit is enabled, used with a key and without, and
# disabled again. Prints "--- PASS: name" / "--- FAIL: name" lines, counted with the Go
# tests'.
set -u
cd "$(dirname "$0")"
export DEBIAN_FRONTEND=noninteractive
fails=0
t0=$(date +%s)
pass() { echo "--- PASS: package/$1"; }
fail() { echo "--- FAIL: package/$1: $2"; fails=$((fails + 1)); }
check() { # name, command...
	local name=$1; shift
	if out=$("$@" 2>&1); then pass "$name"; else fail "$name" "$out"; fi
}
as_alice() { runuser -u alice -- "$@"; }
export -f as_alice
step() { echo "    [$(( $(date +%s) - t0 )) s] $*"; }
scope=/sys/fs/cgroup/system.slice/sandboxd-sandboxes.scope
old=$(dpkg-deb -f pkg/old.deb Version)
new=$(dpkg-deb -f pkg/new.deb Version)
upstream() { echo "${1%-*}"; } # what --version prints: no Debian revision
# The VM has no network: the image holds every package the .deb depends on
# or recommends (VM_EXTRA_PACKAGES in the Makefile). One that is missing
# would make apt try the mirror for each package, a timeout apiece (a new
# Recommends once cost 24 minutes): apt gets no retries and a bounded time,
# so such a run fails its check at once instead.
apt_get() { timeout 300 apt-get -o Acquire::Retries=0 -o Acquire::http::Timeout=5 "$@"; }
# The package lists the image was built from are no use without a network,
# and apt would load them at every call, rebuilding its cache of the
# whole archive for the local .deb (~10 s of each apt-get under
# emulation): apt knows the installed packages alone.
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin

step "apt-get install ./pkg/old.deb ($old)"
check "install" apt_get install -y -q ./pkg/old.deb
check "declared dependencies are installed" bash -c "dpkg -s libseccomp2 python3 e2fsprogs >/dev/null"
check "group sandboxd made" getent group sandboxd
check "units enabled" bash -c '[ "$(systemctl is-enabled sandboxd.socket sandboxd.service | sort -u)" = enabled ]'
check "service started and ready (Type=notify)" bash -c '[ "$(systemctl show -p ActiveState,SubState --value sandboxd | xargs)" = "active running" ]'
check "systemctl status" bash -c 'systemctl status --no-pager sandboxd | grep -q "sessions running"'
check "version" bash -c "sandboxd --version | grep -F '$(upstream "$old")' && sandboxctl --version | grep -F '$(upstream "$old")'"
check "config shipped and valid" sandboxd --config /etc/sandboxd/config.toml --validate
check "manual pages and completions" test -f /usr/share/man/man8/sandboxd.8.gz -a -f /usr/share/man/man1/sandboxctl-exec.1.gz -a -f /usr/share/bash-completion/completions/sandboxctl -a -f /usr/share/zsh/vendor-completions/_sandboxctl
check "socket 0660 group sandboxd" bash -c '[ "$(stat -c %a:%G /run/sandboxd/sandboxd.sock)" = 660:sandboxd ]'
check "watchdog set" bash -c '[ "$(systemctl show -p WatchdogUSec --value sandboxd)" != 0 ]'
useradd --create-home --groups sandboxd alice
useradd --create-home bob
check "a non-member is refused" bash -c '! runuser -u bob -- sandboxctl info'

step "the E2B gateway: sandboxd-e2b.service, installed off"
# e2b_get [KEY]: "STATUS BODY" of the gateway's GET /sandboxes (python3,
# a dependency: the image has no curl).
e2b_get() {
	python3 - "$@" <<-'PY'
	import sys, urllib.request, urllib.error
	req = urllib.request.Request("http://127.0.0.1:3000/sandboxes")
	if len(sys.argv) > 1:
	    req.add_header("X-API-KEY", sys.argv[1])
	try:
	    r = urllib.request.urlopen(req, timeout=5)
	    print(r.status, r.read().decode().strip())
	except urllib.error.HTTPError as e:
	    print(e.code)
	except Exception as e:
	    print("error", e)
	PY
}
check "e2b: installed, neither enabled nor running" bash -c '[ "$(systemctl is-enabled sandboxd-e2b.service)" = disabled ] && ! systemctl is-active --quiet sandboxd-e2b.service'
check "e2b: user sandboxd-e2b, in group sandboxd" bash -c 'id -nG sandboxd-e2b | tr " " "\n" | grep -qx sandboxd'
e2bkey=$(runuser -u sandboxd-e2b -- sandboxctl e2b key create --name vm 2>&1) || fail "e2b: key create as sandboxd-e2b" "$e2bkey"
check "e2b: the key is in the unit's state folder" bash -c '[ "$(stat -c %U:%a /var/lib/sandboxd-e2b/api-keys.json)" = sandboxd-e2b:600 ]'
check "e2b: enable --now" systemctl enable --now sandboxd-e2b.service
for _ in $(seq 30); do [ "$(e2b_get)" = 401 ] && break; sleep 1; done
out=$(e2b_get); check "e2b: without a key, 401" test "$out" = 401
out=$(e2b_get "$e2bkey"); check "e2b: with the key, 200 []" test "$out" = "200 []"
check "e2b: runs as sandboxd-e2b" bash -c '[ "$(ps -o user= -p "$(systemctl show -p MainPID --value sandboxd-e2b)")" = sandboxd-e2b ]'
check "e2b: doctor sees it answering" bash -c 'sandboxctl doctor --json | grep -q "sandboxd-e2b.service active; answering at 127.0.0.1:3000"'
check "e2b: disable --now" systemctl disable --now sandboxd-e2b.service
if [ "$(e2b_get)" = 401 ]; then fail "e2b: stopped" "still answering"; else pass "e2b: stopped"; fi

systemctl stop sandboxd.service
check "socket outlives the service" bash -c '[ "$(systemctl is-active sandboxd.socket)" = active ] && ! systemctl is-active --quiet sandboxd.service'
start=$(date +%s%N)
check "first connection starts the daemon" as_alice sandboxctl info
echo "    socket activation to an answer: $(( ($(date +%s%N) - start) / 1000000 )) ms"
pid=$(systemctl show -p MainPID --value sandboxd)
check "daemon alone in the service's cgroup" bash -c "grep -qx '0::/system.slice/sandboxd.service' /proc/$pid/cgroup && [ \"\$(cat /sys/fs/cgroup/system.slice/sandboxd.service/cgroup.subtree_control)\" = '' ]"
check "sandboxes in a delegated scope" bash -c 'systemctl show -p ActiveState -p Delegate sandboxd-sandboxes.scope | sort | tr "\n" " " | grep -x "ActiveState=active Delegate=yes " && [ -n "$(cat '$scope'/keeper/cgroup.procs)" ]'

echo "    scope keeper: $(ps -o rss= -p "$(head -1 $scope/keeper/cgroup.procs)") KiB resident"
id=$(as_alice sandboxctl create --memory 64M --pids 32 2>&1) || fail "create as a group member" "$id"
check "session owned by alice" bash -c "as_alice sandboxctl inspect $id | grep -q '\"owner_uid\": $(id -u alice)'"
# The packaged daemon starts its runc sandboxes with the packaged
# sandboxd-init (its sealed copy, /proc/PID/fd/N, is libcontainer's ARGV0).
check "sandboxes start with /usr/libexec/sandboxd/sandboxd-init" bash -c "ls -l /proc/$pid/fd | grep -q 'memfd:runc_cloned:sandboxd-init'"
# ... and with the packaged native supervisor as their PID 1.
check "sandboxes' PID 1 is sandboxd-supervisor" bash -c "as_alice sandboxctl exec $id --shell -c 'cat /proc/1/cmdline' | tr '\\0' ' ' | grep -q '^/etc/sandboxd/sandboxd-supervisor '"
check "memory.max is 64M" bash -c "[ \"\$(cat $scope/sandboxes/$id/memory.max)\" = $((64 << 20)) ]"
check "pids.max is 32" bash -c "[ \"\$(cat $scope/sandboxes/$id/pids.max)\" = 32 ]"
out=$(as_alice sandboxctl exec "$id" -c 'b = bytearray(256 << 20); b[::4096] = b"x" * len(b[::4096])' 2>&1); rc=$?
if [ $rc -eq 137 ]; then pass "memory limit kills"; else fail "memory limit kills" "rc=$rc $out"; fi
out=$(as_alice sandboxctl exec "$id" --shell -c 'for i in $(seq 60); do sleep 5 & done; wait' 2>&1); rc=$?
if echo "$out" | grep -qi "resource temporarily unavailable\|fork\|retry"; then pass "pids limit refuses forks"; else fail "pids limit refuses forks" "rc=$rc $out"; fi
# Above its scope only systemd writes cgroup.subtree_control, and systemd
# 252 never enables hugetlb, rdma or misc: finding one there means sandboxd
# (libcontainer's CreateCgroupPath, before the patch in
# third_party/opencontainers-cgroups) wrote outside its subtree. In it,
# sandboxes get what their limits need (cpuset: ceil(cpus) CPUs, so nproc
# tells the truth).
check "nothing written above the scope" bash -c "! grep -HE 'hugetlb|rdma|misc' /sys/fs/cgroup/cgroup.subtree_control /sys/fs/cgroup/system.slice/cgroup.subtree_control"
check "in the scope: cpuset cpu memory pids" bash -c "for d in $scope $scope/sandboxes; do [ \"\$(cat \$d/cgroup.subtree_control)\" = 'cpuset cpu memory pids' ] || { echo \$d: \$(cat \$d/cgroup.subtree_control); exit 1; }; done"
check "no systemd variables in the sandbox" bash -c "! as_alice sandboxctl exec $id --shell -c env | grep -E 'NOTIFY_SOCKET|LISTEN_|WATCHDOG_|INVOCATION_ID|JOURNAL_STREAM|SYSTEMD_EXEC_PID'"
check "structured journal fields" bash -c "journalctl -u sandboxd -o json --no-pager | grep -q '\"SESSION\":\"$id\"'"
as_alice sandboxctl exec "$id" -c 'x = 41' >/dev/null
as_alice sandboxctl exec "$id" --shell -c 'echo kept > /workspace/note' >/dev/null
sbpid=$(head -1 "$scope/sandboxes/$id/cgroup.procs")

step "systemctl restart sandboxd"
systemctl restart sandboxd
check "restart: a new daemon" bash -c "[ \"\$(systemctl show -p MainPID --value sandboxd)\" != $pid ] && systemctl is-active --quiet sandboxd"
check "restart: the session kept its variables" bash -c "[ \"\$(as_alice sandboxctl exec $id -c 'print(x + 1)')\" = 42 ]"
check "restart: same sandbox process" bash -c "grep -qx $sbpid $scope/sandboxes/$id/cgroup.procs"

step "upgrade: apt-get install ./pkg/new.deb ($new), config edited"
echo "# edited by the administrator" >> /etc/sandboxd/config.toml
pid=$(systemctl show -p MainPID --value sandboxd)
check "upgrade" apt_get install -y -q ./pkg/new.deb
check "upgrade: new version runs" bash -c "[ \"\$(dpkg-query -W -f '\${Version}' sandboxd)\" = '$new' ] && sandboxd --version | grep -F '$(upstream "$new")' && [ \"\$(systemctl show -p MainPID --value sandboxd)\" != $pid ] && systemctl is-active --quiet sandboxd"
check "upgrade: edited config kept" grep -q "edited by the administrator" /etc/sandboxd/config.toml
check "upgrade: the session kept its variables and files" bash -c "[ \"\$(as_alice sandboxctl exec $id -c 'print(x + 1)')\" = 42 ] && [ \"\$(as_alice sandboxctl exec $id --shell -c 'cat /workspace/note')\" = kept ]"
check "upgrade: same sandbox process" bash -c "grep -qx $sbpid $scope/sandboxes/$id/cgroup.procs"

step "apt-get remove sandboxd, a session running"
check "remove" apt_get remove -y -q sandboxd
check "remove: units stopped" bash -c '! systemctl is-active --quiet sandboxd.socket && ! systemctl is-active --quiet sandboxd.service && ! systemctl is-active --quiet sandboxd-sandboxes.scope'
check "remove: no process left" bash -c '! pgrep -a -x sandboxd && ps -eo uid=,args= | awk "\$1 >= 2000000 { print; bad = 1 } END { exit bad }"'
check "remove: no mount or loop device left" bash -c '! grep sandboxd /proc/self/mountinfo && ! losetup -n -O NAME,BACK-FILE | grep sandboxd'
check "remove: no cgroup left" bash -c '[ -z "$(find /sys/fs/cgroup -name "sandboxd*" | tee /dev/stderr)" ]'
check "remove: binaries gone, state and config kept" bash -c '! [ -e /usr/bin/sandboxd ] && [ -f /var/lib/sandboxd/sandboxd.db ] && [ -f /etc/sandboxd/config.toml ]'

step "apt-get purge sandboxd"
inst=$(cat /var/lib/sandboxd/instance 2>/dev/null || echo none)
gid=$(getent group sandboxd | cut -d: -f3)
check "the daemon leased its id range" test -f "/run/sandboxd-ids/$inst.json"
check "purge" apt_get purge -y -q sandboxd
check "purge: id range lease gone" bash -c "! [ -e /run/sandboxd-ids/$inst.json ]"
check "purge: nothing left" bash -c '! [ -e /var/lib/sandboxd ] && ! [ -e /run/sandboxd ] && ! [ -e /etc/sandboxd ] && [ -z "$(find /etc/systemd /usr/lib/systemd /var/lib/systemd -name "sandboxd*")" ] && ! dpkg -s sandboxd >/dev/null 2>&1 && [ -z "$(systemctl list-units --all --plain --no-legend "sandboxd*")" ]'
# Files may still carry the group's gid; freed, it would go to the next
# group made.
check "purge: group sandboxd kept" bash -c "[ -n '$gid' ] && [ \"\$(getent group sandboxd | cut -d: -f3)\" = '$gid' ]"
check "purge: the E2B gateway's keys gone, its user kept" bash -c '! [ -e /var/lib/sandboxd-e2b ] && getent passwd sandboxd-e2b >/dev/null'

step "install under a policy-rc.d that forbids starting services"
printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d
check "install with policy-rc.d" apt_get install -y -q ./pkg/new.deb
check "reinstall: the kept group, same gid" bash -c "[ \"\$(getent group sandboxd | cut -d: -f3)\" = '$gid' ] && [ \$(getent group | grep -c '^sandboxd:') = 1 ]"
check "policy-rc.d: enabled, not started" bash -c '[ "$(systemctl is-enabled sandboxd.socket)" = enabled ] && ! systemctl is-active --quiet sandboxd.socket && ! systemctl is-active --quiet sandboxd.service'
rm -f /usr/sbin/policy-rc.d
check "purge again" apt_get purge -y -q sandboxd
check "nothing left again but the group" bash -c '! [ -e /var/lib/sandboxd ] && ! [ -e /etc/sandboxd ] && getent group sandboxd >/dev/null && [ -z "$(find /sys/fs/cgroup -name "sandboxd*")" ]'
userdel -r alice 2>/dev/null; userdel -r bob 2>/dev/null

if [ $fails -gt 0 ]; then
	journalctl -u sandboxd --no-pager -o cat | tail -40
fi
echo "package tests: $fails failed in $(( $(date +%s) - t0 )) s"
[ $fails -eq 0 ]
