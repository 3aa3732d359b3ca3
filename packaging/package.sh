#!/bin/sh
# Builds dist/sandboxd_VERSION-1_ARCH.deb and dist/sandboxd-VERSION-1.RPMARCH.rpm
# from binaries already built for ARCH (make packages, make packages-arm64):
# stages what packaging/nfpm.yaml takes in dist/pkg/ARCH, then runs nfpm.
# PKG_DIST in the environment names another folder than dist for both (make
# vm-prep builds its packages beside make packages).
# Manual pages and completions come from the host's binaries (HOST_BIN):
# they are the same text on every architecture, and a cross-built binary
# cannot run here.
# Usage: package.sh ARCH BIN HOST_BIN (Go's ARCH names, as Debian's: amd64,
# arm64), with PKG_VERSION, NFPM (the nfpm command) and STRIP (the strip of
# ARCH's binutils) in the environment.
set -eu
arch=$1 bin=$2 host_bin=$3
[ -f go.mod ] && [ -f packaging/nfpm.yaml ] || { echo "package.sh: run it from the repository's root" >&2; exit 1; }
: "${PKG_VERSION:?}" "${NFPM:?}" "${STRIP:=strip}"
dist=${PKG_DIST:-dist}
case $arch in
amd64) rpmarch=x86_64 ;;
arm64) rpmarch=aarch64 ;;
*) rpmarch=$arch ;;
esac
d=$dist/pkg/$arch
rm -rf "$d"
mkdir -p "$d/bin" "$d/man" "$d/man8" "$d/completions"

# Stripped as dh_strip strips (Debian policy; lintian's
# unstripped-binary-or-object): no symbol table, no debug sections, the
# GNU build id kept. Go's tracebacks read .gopclntab, which stays.
for b in sandboxd sandboxctl sandboxd-init sandboxd-supervisor; do
	"$STRIP" --remove-section=.comment --remove-section=.note --strip-unneeded -o "$d/bin/$b" "$bin/$b"
done

"$host_bin/sandboxctl" man "$d/man"
"$host_bin/sandboxd" man "$d/man8"
gzip -9n "$d"/man/*.1 "$d"/man8/*.8
"$host_bin/sandboxctl" completion bash >"$d/completions/sandboxctl.bash"
"$host_bin/sandboxctl" completion zsh >"$d/completions/_sandboxctl"
"$host_bin/sandboxctl" completion fish >"$d/completions/sandboxctl.fish"

packaging/shipped-config.sh contrib/config.toml "$d/config.toml"
maintainer=$(sed -n 's/^maintainer: *//p' packaging/nfpm.yaml)
packaging/changelog.sh "$PKG_VERSION-1" "$maintainer" "$d/changelog.Debian.gz"
python3 packaging/copyright.py "$d/copyright" "$bin/sandboxd" "$bin/sandboxctl"

# The .deb's libc6 and libseccomp2 dependencies, versioned as the
# binaries need them: dpkg-shlibdeps reads the symbols they use and the
# symbols files of the libraries they link (ARCH's, installed as
# libc6:ARCH and libseccomp2:ARCH for a cross build), in the layout it
# expects of a package build.
s=$d/shlibs
mkdir -p "$s/debian/sandboxd/DEBIAN" "$s/debian/sandboxd/usr/bin"
printf 'Source: sandboxd\n\nPackage: sandboxd\nArchitecture: any\n' >"$s/debian/control"
cp "$d/bin/sandboxd" "$d/bin/sandboxctl" "$d/bin/sandboxd-init" "$s/debian/sandboxd/usr/bin/"
PKG_DEB_SHLIBS=$(cd "$s" && DEB_HOST_ARCH=$arch dpkg-shlibdeps -O debian/sandboxd/usr/bin/sandboxd debian/sandboxd/usr/bin/sandboxctl debian/sandboxd/usr/bin/sandboxd-init | sed -n 's/^shlibs:Depends=//p')
case $PKG_DEB_SHLIBS in
*libc6*libseccomp2* | *libseccomp2*libc6*) ;;
*) echo "package.sh: dpkg-shlibdeps found no libc6 and libseccomp2 in: $PKG_DEB_SHLIBS" >&2; exit 1 ;;
esac
# The .rpm's glibc: the newest GLIBC_x.y symbol version the binaries
# need from libc.so.6 (readelf reads any architecture's ELF). The native
# supervisor (sandboxd-supervisor) is static: it needs no library, on the
# host or in a template's root filesystem.
glibc=$(readelf --version-info --wide "$d/bin/sandboxd" "$d/bin/sandboxctl" "$d/bin/sandboxd-init" | sed -n 's/.*Name: GLIBC_\([0-9][0-9.]*\) .*/\1/p' | sort -uV | tail -1)
[ -n "$glibc" ] || { echo "package.sh: no GLIBC_ version needed by the binaries?" >&2; exit 1; }
PKG_RPM_GLIBC="glibc >= $glibc"

rm -f "$dist"/sandboxd_*_"$arch".deb "$dist"/sandboxd-*."$rpmarch".rpm
for p in deb rpm; do
	PKG_VERSION=$PKG_VERSION PKG_ARCH=$arch PKG_DIR=$d PKG_DEB_SHLIBS=$PKG_DEB_SHLIBS PKG_RPM_GLIBC=$PKG_RPM_GLIBC \
		$NFPM package --config packaging/nfpm.yaml --packager "$p" --target "$dist/"
done
ls -l "$dist"/sandboxd_*_"$arch".deb "$dist"/sandboxd-*."$rpmarch".rpm
