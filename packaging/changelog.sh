#!/bin/sh
# Writes the .deb's /usr/share/doc/sandboxd/changelog.Debian.gz: one entry,
# for the version being built, naming the upstream commit it was built
# from. Debian policy wants the file in every non-native package (our
# versions carry a "-1" revision); apt changelog and apt-listchanges read
# it. Its date is the commit's, not the clock's, so that two builds of one
# commit make the same file (gzip -n: no name or time in the header).
# Usage: changelog.sh DEB_VERSION MAINTAINER OUTPUT
set -eu
version=$1 maintainer=$2 out=$3
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
date=$(git log -1 --format=%cD 2>/dev/null || true)
if [ -z "$date" ]; then
	# A tree without its history (a tarball): SOURCE_DATE_EPOCH, or now.
	date=$(LC_ALL=C date -u -R ${SOURCE_DATE_EPOCH:+-d @$SOURCE_DATE_EPOCH})
fi
dirty=
# GIT_OPTIONAL_LOCKS=0: a status that never rewrites the index.
if [ -n "$(GIT_OPTIONAL_LOCKS=0 git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	dirty=", with uncommitted changes"
fi
{
	echo "sandboxd ($version) unstable; urgency=medium"
	echo
	echo "  * Built from upstream commit $commit$dirty."
	echo
	echo " -- $maintainer  $date"
} | gzip -9n >"$out"
