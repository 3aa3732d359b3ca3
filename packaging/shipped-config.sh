#!/bin/sh
# Writes the /etc/sandboxd/config.toml the packages install, from
# contrib/config.toml (the reference: every key set to its default, which
# daemon/config/config_test.go holds to config.Default), with every key commented
# out. The installed file is a conffile: dpkg and rpm keep an edited one
# on upgrade, so a key it set would stay pinned to the old release's
# default forever; commented out, the daemon's built-in default applies,
# and an upgrade's new defaults with it. Tables ([defaults], [max], ...)
# stay uncommented so that uncommenting a key below one is enough.
# Usage: shipped-config.sh REFERENCE OUTPUT
set -eu
in=$1 out=$2
awk '
# The reference header says "every key with its default"; this one says
# what the installed file is.
!started {
	if ($0 != "") next
	started = 1
	print "# sandboxd configuration, read by sandboxd.service (sandboxd --config"
	print "# /etc/sandboxd/config.toml). Every key stands commented out, shown with its"
	print "# default: what this file leaves alone takes the daemon'"'"'s own default, and a"
	print "# new release'"'"'s default after an upgrade. To change a key, uncomment it"
	print "# (its [table] line above is already in force). Flags (--socket,"
	print "# --data-dir, --run-dir, --log-level) override the file."
	print "# Check it with: sandboxd --config /etc/sandboxd/config.toml --validate"
}
# A key, and the lines of a value that spans several (an array or inline
# table left open on its first line).
open > 0 || /^[ \t]*[A-Za-z0-9_."-]+[ \t]*=/ {
	line = $0
	sub(/#.*/, "", line)   # values here hold no "#" in strings
	open += gsub(/[[{]/, "", line) - gsub(/[]}]/, "", line)
	print "# " $0
	next
}
{ print }
' "$in" >"$out.tmp"
# Nothing but comments, blank lines and table headers may be left.
if bad=$(grep -nvE '^[[:space:]]*(#.*)?$|^\[[A-Za-z0-9_.]+\][[:space:]]*(#.*)?$' "$out.tmp"); then
	echo "shipped-config.sh: uncommented lines left in $out:" >&2
	echo "$bad" >&2
	rm -f "$out.tmp"
	exit 1
fi
mv "$out.tmp" "$out"
