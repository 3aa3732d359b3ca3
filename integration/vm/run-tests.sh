#!/usr/bin/env bash
# Runs inside the Debian 12 test VM (systemd PID 1, pure cgroup v2), from
# the share that `make test-vm` prepared: the prebuilt test binaries run as
# a systemd service with Delegate=yes, as sandboxd does in production.
set -u
cd "$(dirname "$0")"
systemctl is-system-running --wait >/dev/null 2>&1 || true
echo "cgroup: $(stat -fc %T /sys/fs/cgroup) controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
rc=0
t0=$(date +%s)

# watchdog UNIT SECONDS: if the unit still runs after SECONDS, prints its
# processes and the freezer state of its cgroups, thaws them, and sends it
# SIGQUIT (a Go test binary then prints every goroutine's stack and exits).
watchdog() {
	sleep "$2" </dev/null >/dev/null 2>&1
	systemctl is-active -q "$1" || return 0
	echo "=== $1 still runs after $2 s: its cgroups and processes"
	base=/sys/fs/cgroup/system.slice/$1.service
	find "$base" -name cgroup.freeze 2>/dev/null | while read -r f; do
		d=$(dirname "$f")
		echo "$d freeze=$(cat "$f") $(grep frozen "$d/cgroup.events") procs=$(tr '\n' ' ' <"$d/cgroup.procs")"
	done
	ps -eo pid,stat,wchan:24,args | grep -v ' \[' | cut -c1-160
	find "$base" -name cgroup.freeze 2>/dev/null | while read -r f; do echo 0 >"$f"; done
	systemctl kill -s QUIT "$1"
}

# isolation's sandbox tests are its engines' (isolation/runc, isolation/runsc).
for t in cgroups isolation runc runsc integration; do
	echo "=== $t (cgroup v2, systemd unit with Delegate=yes) at $(( $(date +%s) - t0 )) s"
	# The patch check reads the source tree (go.mod, third_party), which
	# the VM does not have; it runs on the host.
	skip='^$'
	[ "$t" = cgroups ] && skip='^TestPatchedOpencontainersCgroups$'
	# Of the integration tests, those tests.txt opts in: what depends on
	# cgroup v2 or systemd (the host runs the rest).
	run='.'
	[ "$t" = integration ] && run="^($(sed 's/#.*//' tests.txt | awk 'NF {print $1}' | paste -sd'|'))\$"
	# A test binary that stalls (one stalled in TestFreezeThaw, then
	# isolation's first test and now runc's, once in CI: no output, not
	# even its own timeout's panic, as a frozen process would) is shown,
	# thawed and made to dump its goroutines after 30 minutes (the
	# longest, integration, takes ~22 here): a watchdog for stalls, not a
	# budget.
	watchdog "sbd-test-$t" 1800 &
	wd=$!
	systemd-run --quiet --wait --collect --unit "sbd-test-$t" -p Delegate=yes \
		-p WorkingDirectory="$PWD" -p StandardOutput=file:"$PWD/$t.log" -p StandardError=file:"$PWD/$t.log" \
		-E SANDBOXD_TEST_BIN="$PWD/bin" -E SANDBOXD_OLD_BIN="$PWD/old-bin" -E PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		"$PWD/$t.test" -test.count=1 -test.v -test.short -test.timeout=30m -test.run "$run" -test.skip "$skip"
	r=$?
	# Its sleep too: it would hold the output open after this script ends.
	{ pkill -P "$wd"; kill "$wd"; wait "$wd"; } 2>/dev/null
	grep -E '^(=== RUN|--- (PASS|FAIL|SKIP)|PASS|FAIL|ok|panic)' "$t.log" | grep -v '=== RUN' || true
	grep -B2 -A20 -- '--- FAIL' "$t.log" | head -80 || true
	# A binary that died without a failed test (a panic, the watchdog's
	# SIGQUIT) shows where it was.
	[ $r -ne 0 ] && ! grep -q -- '--- FAIL' "$t.log" && tail -150 "$t.log"
	[ $r -ne 0 ] && rc=1
done
echo "=== package (the .deb installed, used as group sandboxd, restarted, upgraded, removed, purged) at $(( $(date +%s) - t0 )) s"
# Streamed as it goes: a step that hangs shows where the run stopped.
./package-test.sh 2>&1 | tee package.log
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
# Nothing of the tests may be left in the cgroup tree.
left=$(find /sys/fs/cgroup -type d -path '*sbd-test*' -name '[0-9a-f]*' 2>/dev/null | grep -E '/[0-9a-f]{16}$' || true)
if [ -n "$left" ]; then echo "leftover sandbox cgroups: $left"; rc=1; fi
passed=$(cat ./*.log | grep -c -- '^--- PASS' || true)
failed=$(cat ./*.log | grep -c -- '^--- FAIL' || true)
echo "vm tests exit $rc after $(( $(date +%s) - t0 )) s"
echo "vm: $passed passed, $failed failed"
exit $rc
