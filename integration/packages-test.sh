#!/usr/bin/env bash
# Checks what `make packages` and `make packages-arm64` built (run by make
# test-packages, on the host): each pair carries the binaries (of its
# architecture, stripped, running: the arm64 ones under qemu-user), units,
# the no-replace config with every key commented out, manual pages,
# completions, copyright, changelog, maintainer scripts and versioned
# dependencies; lintian passes the .debs; the .deb's and the .rpm's
# scripts enable the units alike. Nothing is installed: the .deb's life
# on a real systemd host is integration/vm/package-test.sh.
# Usage: packages-test.sh DEB RPM [ARM64_DEB ARM64_RPM]
# (needs dpkg-deb, rpm, cpio, lintian, go; qemu-user-static for arm64;
# bash-completion for the completion check: make test-packages installs
# them).
set -u
if [ $# -ne 2 ] && [ $# -ne 4 ]; then
	echo "usage: $0 DEB RPM [ARM64_DEB ARM64_RPM]" >&2
	exit 2
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
fails=0
pass() { echo "--- PASS: packages/$1"; }
fail() { echo "--- FAIL: packages/$1: $2"; fails=$((fails + 1)); }
check() { # name, command...
	local name=$1; shift
	if out=$("$@" 2>&1); then pass "$name"; else fail "$name" "$out"; fi
}
export -f check pass fail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
files="/usr/bin/sandboxd /usr/bin/sandboxctl /usr/libexec/sandboxd/sandboxd-init /usr/libexec/sandboxd/sandboxd-supervisor /usr/lib/systemd/system/sandboxd.service /usr/lib/systemd/system/sandboxd.socket /usr/lib/systemd/system/sandboxd-e2b.service /etc/sandboxd/config.toml /etc/sandboxd/e2b.env /usr/share/man/man8/sandboxd.8.gz /usr/share/man/man1/sandboxctl.1.gz /usr/share/man/man1/sandboxctl-exec.1.gz /usr/share/bash-completion/completions/sandboxctl /usr/share/fish/vendor_completions.d/sandboxctl.fish"
has_all() { # listing, files...
	local list=$1; shift
	for f in "$@"; do grep -qx "$f" <<<"$list" || { echo "missing $f"; return 1; }; done
}

# run ARCH BINARY ARGS...: a binary of ARCH, natively or under qemu-user.
# qemu-aarch64-static runs it without binfmt_misc (a container may have
# none). No -L: libc6:arm64 (make deps-arm64) gives the loader and libc
# from one glibc; -L /usr/aarch64-linux-gnu would take the cross
# toolchain's older loader with the newer multiarch libc, and hang in
# pthread_create. The timeout turns any such hang into a failure.
run() {
	local arch=$1; shift
	case $arch in
	"$(dpkg --print-architecture)") timeout -s KILL 60 "$@" ;;
	arm64) timeout -s KILL 60 qemu-aarch64-static "$@" ;;
	*) echo "no way to run $arch binaries here"; return 1 ;;
	esac
}
export -f run

# The newest GLIBC_ symbol version the binaries in DIR need.
glibc_needed() {
	readelf --version-info --wide "$1"/usr/bin/sandboxd "$1"/usr/bin/sandboxctl "$1"/usr/libexec/sandboxd/sandboxd-init |
		sed -n 's/.*Name: GLIBC_\([0-9][0-9.]*\) .*/\1/p' | sort -uV | tail -1
}

# Fakes of what the maintainer scripts call to act on the system, which
# log their arguments instead: the scripts' decisions, run here without a
# system to change. is-enabled and was-enabled answer yes, is-active no,
# debian-installed no (a first install: no unit state recorded yet).
fake=$work/fakebin
mkdir -p "$fake"
for c in systemctl deb-systemd-helper deb-systemd-invoke sandboxctl groupadd getent useradd install; do
	cat >"$fake/$c" <<EOF
#!/bin/sh
echo "$c \$*" >>"\$FAKE_LOG"
case "$c \$*" in
*is-active*|*debian-installed*) exit 1 ;;
esac
exit 0
EOF
	chmod +x "$fake/$c"
done
simulate() { # script args...: what it called, one line a call
	local log
	log=$(mktemp "$work/fake.XXXXXX") # its own: the two pairs run at once
	FAKE_LOG=$log PATH=$fake:$PATH sh "$@" >/dev/null 2>&1
	cat "$log"
	rm -f "$log"
}

check_pair() { # arch deb rpm
	local arch=$1 deb=$2 rpm=$3 rpmarch machine d=$work/$1 r=$work/$1-rpm
	case $arch in
	amd64) rpmarch=x86_64 machine="X86-64" ;;
	arm64) rpmarch=aarch64 machine="AArch64" ;;
	*) fail "$arch: architecture" "unknown"; return ;;
	esac
	mkdir -p "$d" "$r"
	dpkg-deb -x "$deb" "$d" && dpkg-deb -e "$deb" "$d/DEBIAN"
	# nfpm's cpio names are absolute: --no-absolute-filenames keeps them
	# below $r, never over the host's /usr and /etc.
	rpm2cpio "$rpm" | (cd "$r" && cpio -idm --no-absolute-filenames --quiet 2>/dev/null)

	local debfiles rpmfiles
	debfiles=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\.||')
	check "$arch deb: files" has_all "$debfiles" $files /usr/share/zsh/vendor-completions/_sandboxctl \
		/usr/share/doc/sandboxd/copyright /usr/share/doc/sandboxd/changelog.Debian.gz /usr/share/lintian/overrides/sandboxd
	check "$arch deb: architecture $arch" bash -c "[ \"\$(dpkg-deb -f '$deb' Architecture)\" = $arch ]"
	check "$arch deb: binaries are $machine ELF, stripped" bash -c "for b in '$d'/usr/bin/sandboxd '$d'/usr/bin/sandboxctl '$d'/usr/libexec/sandboxd/sandboxd-init '$d'/usr/libexec/sandboxd/sandboxd-supervisor; do readelf -h \$b | grep -q 'Machine:.*$machine' || { echo \$b: not $machine; exit 1; }; file \$b | grep -q ', stripped' || { echo \$b: not stripped; exit 1; }; done"
	check "$arch deb: binaries run" bash -c "run $arch '$d/usr/bin/sandboxd' --version && run $arch '$d/usr/bin/sandboxctl' --version"
	check "$arch deb: config is a conffile" grep -qx /etc/sandboxd/config.toml "$d/DEBIAN/conffiles"
	# libc6 as dpkg-shlibdeps versions it: the newest GLIBC_ version
	# the binaries need (2.34 on bookworm), libseccomp2 from its symbols
	# file.
	local glibc
	glibc=$(glibc_needed "$d")
	check "$arch deb: depends (libc6 >= $glibc, versioned libseccomp2)" bash -c "dpkg-deb -f '$deb' Depends | tr ',' '\n' | sed 's/^ *//' | grep -x 'libc6 (>= $glibc)' && dpkg-deb -f '$deb' Depends | grep -E 'libseccomp2 \(>= 2\.[5-9]' | grep -F python3 | grep -F e2fsprogs"
	check "$arch deb: maintainer scripts" bash -c "ls '$d/DEBIAN' | sort | tr '\n' ' ' | grep -q 'postinst postrm prerm'"
	check "$arch deb: scripts are valid sh" bash -c "for s in postinst prerm postrm; do sh -n '$d/DEBIAN/'\$s || exit 1; done"
	check "$arch deb: manual page renders" bash -c "man -l '$d/usr/share/man/man8/sandboxd.8.gz' >/dev/null 2>&1 || zcat '$d/usr/share/man/man8/sandboxd.8.gz' | grep -q '^.SH NAME'"

	# The shipped config: overrides only. Every key of the reference
	# (contrib/config.toml) stands commented out, with its default;
	# nothing but comments and [table] lines is in force; the daemon
	# takes it.
	local cfg=$d/etc/sandboxd/config.toml
	check "$arch config: no key set" bash -c "! grep -nvE '^[[:space:]]*(#.*)?\$|^\[[A-Za-z0-9_.]+\][[:space:]]*(#.*)?\$' '$cfg'"
	check "$arch config: every key shown with its default" bash -c "grep -E '^[A-Za-z0-9_]+ *=' '$repo/contrib/config.toml' | while IFS= read -r l; do grep -qxF \"# \$l\" '$cfg' || { echo \"not commented in: \$l\"; exit 1; }; done"
	check "$arch config: sandboxd --validate takes it" run "$arch" "$d/usr/bin/sandboxd" --config "$cfg" --validate

	# Copyright: DEP-5, sandboxd's own paragraph, and one for every Go
	# module the binaries link (what go version -m reads from them).
	local cr=$d/usr/share/doc/sandboxd/copyright
	check "$arch copyright: DEP-5" bash -c "head -1 '$cr' | grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' && grep -qx 'Files: \*' '$cr' && grep -qx 'Files: go/\*' '$cr'"
	check "$arch copyright: every linked Go module" bash -c "for m in \$(go version -m '$d/usr/bin/sandboxd' '$d/usr/bin/sandboxctl' | awk '\$1 == \"dep\" { print \$2 }' | sort -u); do grep -q \"^Comment: Go module \$m[ ,]\" '$cr' || { echo \"no paragraph for \$m\"; exit 1; }; done"
	check "$arch copyright: a license for every module" bash -c "! grep -n '^License: other' '$cr'"
	check "$arch changelog: entry for this version" bash -c "gzip -t '$d/usr/share/doc/sandboxd/changelog.Debian.gz' && zcat '$d/usr/share/doc/sandboxd/changelog.Debian.gz' | head -1 | grep -qF \"sandboxd (\$(dpkg-deb -f '$deb' Version)) \""
	# lintian: no error or warning but those packaging/deb/lintian-overrides
	# keeps (with -I, info tags show, among them unused-override: an
	# override that matches nothing any more fails too).
	check "$arch deb: lintian" bash -c "out=\$(lintian -I --fail-on error,warning '$deb' 2>&1 | grep -v 'running with root privileges'); rc=\${PIPESTATUS[0]}; echo \"\$out\"; [ \$rc -eq 0 ] && ! grep -E 'unused-override|mismatched-override' <<<\"\$out\""

	# Completions: the same files in both packages; bash's completes
	# against the shipped binary (amd64: arm64's would need qemu in
	# bash's path); every architecture's binary answers __complete, which
	# all three shells' scripts call.
	check "$arch completions: same in deb and rpm" bash -c "cmp '$d/usr/share/bash-completion/completions/sandboxctl' '$r/usr/share/bash-completion/completions/sandboxctl' && cmp '$d/usr/share/zsh/vendor-completions/_sandboxctl' '$r/usr/share/zsh/site-functions/_sandboxctl' && cmp '$d/usr/share/fish/vendor_completions.d/sandboxctl.fish' '$r/usr/share/fish/vendor_completions.d/sandboxctl.fish'"
	check "$arch completions: zsh and fish scripts" bash -c "head -1 '$d/usr/share/zsh/vendor-completions/_sandboxctl' | grep -qx '#compdef sandboxctl' && grep -q '__complete' '$d/usr/share/zsh/vendor-completions/_sandboxctl' && grep -q '^complete -c sandboxctl' '$d/usr/share/fish/vendor_completions.d/sandboxctl.fish' && bash -n '$d/usr/share/bash-completion/completions/sandboxctl'"
	check "$arch completions: sandboxctl __complete" bash -c "run $arch '$d/usr/bin/sandboxctl' __complete template '' | cut -f1 | grep -qx import"
	if [ "$arch" = "$(dpkg --print-architecture)" ]; then
		check "$arch completions: bash completes sandboxctl ex to exec" bash -c "PATH='$d/usr/bin':\$PATH; source /usr/share/bash-completion/bash_completion && source '$d/usr/share/bash-completion/completions/sandboxctl' && COMP_WORDS=(sandboxctl ex) COMP_CWORD=1 COMP_LINE='sandboxctl ex' COMP_POINT=13 && __start_sandboxctl 2>/dev/null; [ \"\${COMPREPLY[*]}\" = exec ] || { echo \"got: \${COMPREPLY[*]}\"; exit 1; }"
	fi

	rpmfiles=$(rpm -qpl "$rpm" 2>/dev/null)
	check "$arch rpm: files" has_all "$rpmfiles" $files /usr/share/zsh/site-functions/_sandboxctl /usr/lib/systemd/system-preset/80-sandboxd.preset /usr/share/licenses/sandboxd/copyright
	# Both packages hold the same files but where the formats differ.
	grep -v '/$' <<<"$debfiles" | grep -vxE '/usr/share/zsh/vendor-completions/_sandboxctl|/usr/share/doc/sandboxd/(copyright|changelog.Debian.gz)|/usr/share/lintian/overrides/sandboxd' | sort >"$d.debfiles"
	grep -vxE '/usr/share/zsh/site-functions/_sandboxctl|/usr/share/licenses/sandboxd/copyright|/usr/lib/systemd/system-preset/80-sandboxd.preset' <<<"$rpmfiles" | sort >"$d.rpmfiles"
	check "$arch rpm: the .deb's files but the format's own" diff "$d.debfiles" "$d.rpmfiles"
	check "$arch rpm: architecture $rpmarch" bash -c "[ \"\$(rpm -qp --qf '%{ARCH}' '$rpm' 2>/dev/null)\" = $rpmarch ]"
	check "$arch rpm: same binaries and config as the deb" bash -c "cmp '$d/usr/bin/sandboxd' '$r/usr/bin/sandboxd' && cmp '$d/usr/bin/sandboxctl' '$r/usr/bin/sandboxctl' && cmp '$cfg' '$r/etc/sandboxd/config.toml'"
	check "$arch rpm: config is noreplace, copyright a license" bash -c "rpm -qp --qf '[%{FILENAMES} %{FILEFLAGS:fflags}\n]' '$rpm' 2>/dev/null | grep -x -e '/etc/sandboxd/config.toml cn' -e '/usr/share/licenses/sandboxd/copyright l' | wc -l | grep -qx 2"
	check "$arch rpm: requires (glibc >= $glibc)" bash -c "rpm -qpR '$rpm' 2>/dev/null | tr '\n' ' ' | grep -F 'glibc >= $glibc ' | grep -F 'libseccomp >= 2.5' | grep -F python3 | grep -qF e2fsprogs"
	check "$arch rpm: scriptlets" bash -c "s=\$(rpm -qp --scripts '$rpm' 2>/dev/null) && for w in preinstall postinstall preuninstall postuninstall; do grep -q \"^\$w scriptlet\" <<<\"\$s\" || { echo no \$w; exit 1; }; done && grep -q 'groupadd -r sandboxd' <<<\"\$s\""
	mkdir -p "$r.scripts"
	rpm -qp --scripts "$rpm" 2>/dev/null | awk -v d="$r.scripts" '/^[a-z]+ scriptlet/ { f = d "/" $1; next } { print > f }'
	check "$arch rpm: scriptlets are valid sh" bash -c "for s in '$r.scripts'/*; do sh -n \$s || exit 1; done; [ \$(ls '$r.scripts' | wc -l) = 4 ]"

	# Item of both formats: the group sandboxd outlives a purge or erase
	# (files may still carry its gid: see packaging/deb/postrm).
	check "$arch scripts: no group removed" bash -c "! grep -n 'groupdel' '$d/DEBIAN/postrm' '$d/DEBIAN/prerm' '$r.scripts'/*"
	# Enabling agrees: a first install enables both units, the .deb with
	# deb-systemd-helper, the .rpm through the presets it ships
	# (%systemd_post); an upgrade leaves the administrator's choice; an
	# erase disables (%systemd_preun), with systemd running or not.
	check "$arch deb: first install enables both units" bash -c "simulate '$d/DEBIAN/postinst' configure '' | grep -c -x -e 'deb-systemd-helper enable sandboxd.socket' -e 'deb-systemd-helper enable sandboxd.service' | grep -qx 2"
	check "$arch deb: first install leaves the E2B gateway off" bash -c "out=\$(simulate '$d/DEBIAN/postinst' configure ''); ! grep -q 'enable sandboxd-e2b' <<<\"\$out\" && ! grep -q 'start.*sandboxd-e2b' <<<\"\$out\" && grep -qx 'deb-systemd-helper update-state sandboxd-e2b.service' <<<\"\$out\""
	check "$arch rpm: first install leaves the E2B gateway off" bash -c "grep -qx 'disable sandboxd-e2b.service' '$r/usr/lib/systemd/system-preset/80-sandboxd.preset' && ! simulate '$r.scripts/postinstall' 1 | grep -E 'enable|start' | grep -q sandboxd-e2b"
	check "$arch rpm: first install applies the presets" bash -c "simulate '$r.scripts/postinstall' 1 | grep -qx 'systemctl --no-reload preset sandboxd.socket sandboxd.service' && grep -qx 'enable sandboxd.socket' '$r/usr/lib/systemd/system-preset/80-sandboxd.preset' && grep -qx 'enable sandboxd.service' '$r/usr/lib/systemd/system-preset/80-sandboxd.preset'"
	check "$arch rpm: an upgrade keeps the administrator's choice" bash -c "! simulate '$r.scripts/postinstall' 2 | grep -E 'preset|enable|disable'"
	check "$arch rpm: erase disables, an upgrade does not" bash -c "simulate '$r.scripts/preuninstall' 0 | grep -q -- '--no-reload disable.* sandboxd.socket sandboxd.service' && ! simulate '$r.scripts/preuninstall' 1 | grep -q disable"
}
export -f has_all glibc_needed simulate
export work fake repo

# The two pairs side by side (lintian, single-threaded, takes ~25 s of
# each), their output in order after.
check_pair "$(dpkg --print-architecture)" "$1" "$2" >"$work/1.out" 2>&1 &
host=$!
if [ $# -eq 4 ]; then
	check_pair arm64 "$3" "$4" >"$work/2.out" 2>&1
fi
wait "$host"
cat "$work"/*.out
fails=$(cat "$work"/*.out | grep -c -- '^--- FAIL' || true)
echo "packages tests: $fails failed"
[ $fails -eq 0 ]
