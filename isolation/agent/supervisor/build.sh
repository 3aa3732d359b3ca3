#!/bin/sh
# build.sh OUT [FLAG...]: compiles the native supervisor to OUT, statically
# (one binary whose text every sandbox on the host shares, whatever the
# template's C library), with $CC (default cc) and jansson's static
# library. FLAGs replace the optimisation and linking ones (the tests build
# it with the sanitizers, which do not link statically). The Makefile, the
# agent's tests and the integration harness all build it here.
set -eu
out=$1
shift
[ $# -gt 0 ] || set -- -O2 -static
dir=$(dirname "$0")
exec ${CC:-cc} -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Werror "$@" -o "$out" "$dir"/*.c -ljansson
