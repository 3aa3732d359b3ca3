#!/usr/bin/env bash
# unit-as-nobody.sh TAGS PACKAGES... runs the unit tier as the user nobody,
# as an ordinary user runs it: `make test-unit` must need no privilege, and
# as root a test can pass that an ordinary user's run fails (root ignores
# a folder's mode). Run as root: it copies the tree (what git tracks and
# what it does not ignore) into a fresh folder nobody owns, with the
# modules vendored from this host's module cache (no network; nobody
# cannot read root's cache), and runs `go test` there as nobody with a
# build cache of nobody's own that outlives the run, so the next is warm.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "unit-as-nobody.sh runs as root (it becomes nobody)"; exit 1; }
tags=$1
shift
go=$(command -v "${GO:-go}")
goroot=$("$go" env GOROOT)
# nobody's build cache, in a folder of root's that nobody cannot replace
# (root never follows a link nobody made: it makes the cache only where
# none is, and touches nothing inside it).
base=/var/tmp/sandboxd-unit
[ ! -L "$base" ] || { echo "$base is a symbolic link: remove it"; exit 1; }
install -d -m 755 -o root -g root "$base"
cache=$base/cache
if [ -L "$cache" ] || [ ! -d "$cache" ]; then
	rm -rf "$cache"
	mkdir -m 700 "$cache"
	chown 65534:65534 "$cache"
fi
tree=$(mktemp -d /tmp/sandboxd-unit-XXXXXX)
trap 'rm -rf "$tree"' EXIT
chmod 755 "$tree"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
	[ -e "$f" ] && printf '%s\0' "$f"
done | tar --null -T - -cf - | tar -xf - -C "$tree"
"$go" mod vendor -o "$tree/vendor"
chown -R 65534:65534 "$tree"
cd "$tree"
# env -i: nothing of root's environment (HOME, GOPATH, GOFLAGS) leaks in.
run() {
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all \
		env -i PATH="$goroot/bin:/usr/local/bin:/usr/bin:/bin" HOME="$cache" GOPATH="$cache/gopath" \
		GOCACHE="$cache/go-build" GOFLAGS="-mod=vendor -trimpath" GOTOOLCHAIN=local GOPROXY=off CGO_ENABLED=1 \
		LANG=C.UTF-8 TMPDIR=/tmp "$@"
}
run go test -tags "$tags" -count=1 "$@"
run go test -tags "$tags" -count=1 -run 'TestPatched' ./cgroups/
