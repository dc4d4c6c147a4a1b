#!/bin/sh
# Builds kapi's Debian package from a built binary: tools/deb.sh KAPI VERSION OUTDIR
# writes OUTDIR/kapi_VERSION_ARCH.deb with the binary in /usr/bin, the man page made from
# its help (tools/man.sh), stripped of its debugging sections, the systemd unit, a default /etc/kapi/config.yaml (a conffile)
# and the maintainer scripts of deploy/debian. The runtime dependencies are the binary's
# shared libraries' packages, as dpkg-shlibdeps finds them (dpkg-dev).
set -e
kapi=$1
version=$2
out=$(realpath "$3")
top=$(cd "$(dirname "$0")/.." && pwd)
arch=$(dpkg --print-architecture)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/root

install -D -m 0755 "$kapi" "$root/usr/bin/kapi"
strip --strip-unneeded --remove-section=.comment "$root/usr/bin/kapi"
mkdir -p "$root/usr/share/man/man1" "$root/DEBIAN"
"$top/tools/man.sh" "$kapi" | gzip -9n >"$root/usr/share/man/man1/kapi.1.gz"
install -D -m 0644 "$top/deploy/systemd/kapi.service" "$root/lib/systemd/system/kapi.service"
install -D -m 0644 "$top/deploy/config.yaml" "$root/etc/kapi/config.yaml"
install -D -m 0644 "$top/README.md" "$root/usr/share/doc/kapi/README.md"
for s in postinst prerm postrm; do
    install -m 0755 "$top/deploy/debian/$s" "$root/DEBIAN/$s"
done
echo /etc/kapi/config.yaml >"$root/DEBIAN/conffiles"

# dpkg-shlibdeps reads the package's name from a debian/control.
mkdir -p "$stage/src/debian"
printf 'Source: kapi\n\nPackage: kapi\nArchitecture: any\n' >"$stage/src/debian/control"
depends=$(cd "$stage/src" && dpkg-shlibdeps -O "$root/usr/bin/kapi" 2>/dev/null |
    sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "deb.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
# libcurl is loaded by the webhook client at its first call (dlopen), not linked, so
# dpkg-shlibdeps cannot see it.
depends="$depends, libcurl4 (>= 7.85)"

cat >"$root/DEBIAN/control" <<EOF2
Package: kapi
Version: $version
Architecture: $arch
Maintainer: kapi developers <kapi@localhost>
Section: admin
Priority: optional
Depends: $depends
Installed-Size: $(du -sk "$root" | cut -f1)
Description: Kubernetes-compatible API server in one small binary
 kapi serves the Kubernetes API (kube-apiserver 1.26's) on an embedded SQLite
 store or on etcd, with the core controllers built in; kubectl and client
 libraries talk to it unmodified. The package runs it as the systemd service
 kapi.service, configured by /etc/kapi/config.yaml.
EOF2
mkdir -p "$out"
deb=$out/kapi_${version}_$arch.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
