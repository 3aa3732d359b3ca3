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
for t in cgroups isolation integration; do
	echo "=== $t (cgroup v2, systemd unit with Delegate=yes) at $(( $(date +%s) - t0 )) s"
	# The patch check reads the source tree (go.mod, third_party), which
	# the VM does not have; it runs on the host.
	skip='^$'
	[ "$t" = cgroups ] && skip='^TestPatchedOpencontainersCgroups$'
	systemd-run --quiet --wait --collect --unit "sbd-test-$t" -p Delegate=yes \
		-p WorkingDirectory="$PWD" -p StandardOutput=file:"$PWD/$t.log" -p StandardError=file:"$PWD/$t.log" \
		-E SANDBOXD_TEST_BIN="$PWD/bin" -E SANDBOXD_OLD_BIN="$PWD/old-bin" -E PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		"$PWD/$t.test" -test.count=1 -test.v -test.short -test.timeout=30m -test.skip "$skip"
	r=$?
	grep -E '^(=== RUN|--- (PASS|FAIL|SKIP)|PASS|FAIL|ok|panic)' "$t.log" | grep -v '=== RUN' || true
	grep -B2 -A20 -- '--- FAIL' "$t.log" | head -80 || true
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
