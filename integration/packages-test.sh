#!/usr/bin/env bash
# Checks what `make packages` built (run by make test, on the host): both
# packages carry the binaries, units, no-replace config, manual pages,
# completions, maintainer scripts and dependencies. The .deb's life on a
# real systemd host is integration/vm/package-test.sh.
# Usage: packages-test.sh DEB RPM
set -u
deb=$1 rpm=$2
fails=0
pass() { echo "--- PASS: packages/$1"; }
fail() { echo "--- FAIL: packages/$1: $2"; fails=$((fails + 1)); }
check() { # name, command...
	local name=$1; shift
	if out=$("$@" 2>&1); then pass "$name"; else fail "$name" "$out"; fi
}
files="/usr/bin/sandboxd /usr/bin/sandboxctl /usr/lib/systemd/system/sandboxd.service /usr/lib/systemd/system/sandboxd.socket /etc/sandboxd/config.toml /usr/share/man/man8/sandboxd.8.gz /usr/share/man/man1/sandboxctl.1.gz /usr/share/man/man1/sandboxctl-exec.1.gz /usr/share/bash-completion/completions/sandboxctl /usr/share/fish/vendor_completions.d/sandboxctl.fish"
has_all() { # listing, files...
	local list=$1; shift
	for f in "$@"; do grep -qx "$f" <<<"$list" || { echo "missing $f"; return 1; }; done
}

debfiles=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\.||')
check "deb: files" has_all "$debfiles" $files /usr/share/zsh/vendor-completions/_sandboxctl
check "deb: config is a conffile" bash -c "dpkg-deb --ctrl-tarfile '$deb' | tar -xOf - ./conffiles | grep -qx /etc/sandboxd/config.toml"
check "deb: depends" bash -c "dpkg-deb -f '$deb' Depends | grep -F 'libseccomp2 (>= 2.5)' | grep -F python3 | grep -F e2fsprogs"
check "deb: maintainer scripts" bash -c "dpkg-deb --ctrl-tarfile '$deb' | tar -tf - | sort | tr '\n' ' ' | grep -q './postinst ./postrm ./prerm'"
check "deb: scripts are valid sh" bash -c "d=\$(mktemp -d) && dpkg-deb -e '$deb' \$d && for s in postinst prerm postrm; do sh -n \$d/\$s || exit 1; done; rm -rf \$d"
check "deb: binaries run" bash -c "d=\$(mktemp -d) && dpkg-deb -x '$deb' \$d && \$d/usr/bin/sandboxd --version && \$d/usr/bin/sandboxctl --version && man -l \$d/usr/share/man/man8/sandboxd.8.gz >/dev/null 2>&1 || zcat \$d/usr/share/man/man8/sandboxd.8.gz | grep -q '^.SH NAME'; r=\$?; rm -rf \$d; exit \$r"

rpmfiles=$(rpm -qpl "$rpm" 2>/dev/null)
check "rpm: files" has_all "$rpmfiles" $files /usr/share/zsh/site-functions/_sandboxctl
check "rpm: config is noreplace" bash -c "rpm -qp --qf '[%{FILENAMES} %{FILEFLAGS:fflags}\n]' '$rpm' 2>/dev/null | grep -qx '/etc/sandboxd/config.toml cn'"
check "rpm: requires" bash -c "rpm -qpR '$rpm' 2>/dev/null | tr '\n' ' ' | grep -F 'libseccomp >= 2.5' | grep -F python3 | grep -qF e2fsprogs"
check "rpm: scriptlets" bash -c "s=\$(rpm -qp --scripts '$rpm' 2>/dev/null) && for w in preinstall postinstall preuninstall postuninstall; do grep -q \"^\$w scriptlet\" <<<\"\$s\" || { echo no \$w; exit 1; }; done && grep -q 'groupadd -r sandboxd' <<<\"\$s\""
check "rpm: scriptlets are valid sh" bash -c "d=\$(mktemp -d) && rpm -qp --scripts '$rpm' 2>/dev/null | awk -v d=\$d '/^[a-z]+ scriptlet/ { f = d \"/\" \$1; next } { print > f }' && for s in \$d/*; do sh -n \$s || exit 1; done; n=\$(ls \$d | wc -l); rm -rf \$d; [ \$n = 4 ]"
echo "packages tests: $fails failed"
[ $fails -eq 0 ]
