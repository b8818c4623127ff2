#!/usr/bin/env bash
# PosLens on Debian 13 (trixie: LibTorch 2.6, Qt 6.8, HDF5 1.14, gcc 14): build it, run its whole
# suite and make its .deb packages in a debootstrap chroot, then install those packages in a
# clean trixie chroot (scripts/test_deb_install.sh --suite trixie: apt, ldd, a CLI run, the GUI
# under Xvfb and a screenshot). Not part of CI (it takes most of an hour on 2 cores); its last
# result is in docs/reliability.md.
#
#   sudo scripts/test_trixie.sh [--skip-suite] [--skip-install] [OUT_DIR]
#
# OUT_DIR (default /tmp/poslens-trixie) receives the logs, the .debs and the screenshot.
# The build chroot, $CHROOT_DIR/trixie-build (default /work/chroot), is made once
# (`debootstrap --variant=minbase trixie`) and reused: its packages come from the project's own
# scripts/setup.sh run inside it, and its ccache stays, so a second run rebuilds little. The
# project goes in as its working tree (tracked and untracked files git does not ignore) and
# ../shared/fixtures beside it, as CI has them. Every step's output goes to OUT_DIR/<step>.log.
# Exits 0 when every step passed, 1 naming the first that failed, 2 on bad usage.
set -Eeuo pipefail
cd "$(dirname "$0")/.."
project=$(pwd)

skip_suite=0
skip_install=0
out=/tmp/poslens-trixie
while (($#)); do
  case $1 in
    --skip-suite) skip_suite=1; shift ;;
    --skip-install) skip_install=1; shift ;;
    -h|--help) sed -n '2,/^# Exits/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    -*) echo "unknown option: $1" >&2; exit 2 ;;
    *) out=$1; shift ;;
  esac
done
((EUID == 0)) || { echo "must run as root (debootstrap, chroot and mounts)" >&2; exit 2; }
fixtures=$project/../shared/fixtures
[[ -d $fixtures/stories260K ]] || { echo "no $fixtures (../shared beside the project)" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
CHROOT_DIR=${CHROOT_DIR:-/work/chroot}
root=$CHROOT_DIR/trixie-build
MIRROR=${MIRROR:-http://deb.debian.org/debian}

# Mounts in a private namespace: gone when the script ends, however it ends.
if [[ -z ${POSLENS_TRIXIE_NS:-} ]] && unshare --mount --propagation private true 2>/dev/null; then
  export POSLENS_TRIXIE_NS=1
  args=()
  ((skip_suite)) && args+=(--skip-suite)
  ((skip_install)) && args+=(--skip-install)
  exec unshare --mount --propagation private -- "$BASH" "$project/scripts/test_trixie.sh" "${args[@]}" "$out"
fi

step=start
SECONDS=0
fail() { echo "FAIL [$step] after ${SECONDS}s: $* (log: $out/$step.log)" >&2; exit 1; }
begin() { step=$1; : >"$out/$step.log"; echo "== [$((SECONDS / 60)) min] $step"; }
# Runs a command in the chroot with a clean environment; output to OUT_DIR/<step>.log.
in_chroot() {
  chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 TERM=dumb DEBIAN_FRONTEND=noninteractive "$@" >>"$out/$step.log" 2>&1
}

begin base
if [[ ! -x $root/usr/bin/apt-get ]]; then
  mkdir -p "$CHROOT_DIR"
  debootstrap --variant=minbase trixie "$root" "$MIRROR" >"$out/base.log" 2>&1 || fail "debootstrap"
fi
: >"$root/etc/apt/sources.list"
cat >"$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: trixie trixie-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: trixie-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"  # no service starts in the chroot
chmod 755 "$root/usr/sbin/policy-rc.d"
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mount -t sysfs -o ro sysfs "$root/sys"
mkdir -p "$root/dev/pts" "$root/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$root/dev/pts"
mount -t tmpfs -o mode=1777,size=1g shm "$root/dev/shm"

begin copy
rm -rf "$root/src/project" "$root/src/shared"
mkdir -p "$root/src/project" "$root/src/shared"
git ls-files -z --cached --others --exclude-standard | tar -C "$project" --null -T - -cf - |
  tar -C "$root/src/project" -xf - || fail "copying the working tree"
cp -a "$fixtures" "$root/src/shared/" || fail "copying the fixtures"
echo "project $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo '+changes')"

begin setup  # the project's own setup script; dpkg-dev and file for cpack's dpkg-shlibdeps
in_chroot bash -c 'apt-get update -q && bash /src/project/scripts/setup.sh --no-venv &&
  apt-get install -y -q --no-install-recommends dpkg-dev file' || fail "scripts/setup.sh"
in_chroot bash -c 'g++ --version | head -1; dpkg-query -W -f "\${Package} \${Version}\n" libtorch-dev qt6-base-dev libhdf5-dev cmake'
tail -n 5 "$out/setup.log"

begin build
in_chroot bash -c 'cd /src/project && time bash scripts/build.sh' || fail "the build"
grep -E 'PosLens: LibTorch' "$out/build.log" || true
echo "compiler warnings: $(grep -c 'warning:' "$out/build.log" || true) (the log has them)"

if ((!skip_suite)); then
  begin suite
  in_chroot bash -c 'cd /src/project && export QT_QPA_PLATFORM=offscreen POSLENS_TESTS_STRICT=1 &&
    time ctest --test-dir build --output-on-failure --timeout 900 -j 2' || fail "the suite"
  grep -E 'tests passed|Total Test time' "$out/suite.log"
fi

begin packages
rm -f "$root"/src/project/build/poslens*.deb
in_chroot bash -c 'cd /src/project/build && cpack -G DEB' || fail "cpack"
cp "$root"/src/project/build/poslens*.deb "$out/"
ls -l "$out"/poslens*.deb

if ((!skip_install)); then
  begin install
  bash "$project/scripts/test_deb_install.sh" --suite trixie --screenshot "$out/installed-gui.png" \
    "$out"/poslens*.deb >"$out/install.log" 2>&1 || fail "the install test"
  grep -E '^PASS|screenshot|packages installed by apt' "$out/install.log"
fi
ran="build"
((skip_suite)) || ran+=", suite"
ran+=", packages"
((skip_install)) || ran+=" and install"
echo "PASS: trixie $ran ($((SECONDS / 60)) min); logs in $out"
