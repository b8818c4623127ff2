#!/usr/bin/env bash
# Install test of the PosLens .deb packages in a clean Debian 12 (bookworm) chroot, or
# Debian 13 (trixie) with --suite trixie (packages built there: scripts/test_trixie.sh).
#
#   sudo scripts/test_deb_install.sh [OPTIONS] DEB...     e.g. build/poslens*.deb
#   sudo scripts/test_deb_install.sh --self-test           the chroot, Xvfb and screenshot alone
#
# Options:
#   --suite NAME       bookworm (default) or trixie: the Debian release of the chroot
#   --screenshot PATH  where the GUI's screenshot goes (default /tmp/poslens-deb-install.png)
#   --demo NAME        demo under /usr/share/poslens/demos to open (default flipflop-cope)
#   --wait SECONDS     time the GUI gets to load and run the demo before the screenshot (default 15)
#   --no-recommends    apt-get install --no-install-recommends: only Depends pull packages in
#                      (default: apt's default, Recommends too, as a user's `apt install` does)
#   --keep             leave this run's chroot in place (its path is printed) for a look inside
#   --self-test        no packages: prove the chroot part works (mounts, apt, Xvfb, import)
#   --rebuild-base     delete the pristine base chroot first and make it again
# Environment: CHROOT_DIR (default /work/chroot), BASE (default $CHROOT_DIR/SUITE),
#   APT_CACHE (default $CHROOT_DIR/apt-archives; empty: none), MIRROR (default
#   http://deb.debian.org/debian, what this machine's apt uses), SECURITY_MIRROR (default
#   http://deb.debian.org/debian-security).
#
# What happens:
#  1. The pristine base, $BASE, is made once: `debootstrap --variant=minbase SUITE` from
#     $MIRROR, apt sources for SUITE, SUITE-updates and SUITE-security, a policy-rc.d
#     that keeps services from starting, and the .debs of the test's own tools (Xvfb, xauth,
#     x11-utils, ImageMagick, man-db, desktop-file-utils) DOWNLOADED into the apt cache but not
#     installed. Nothing of Qt, LibTorch or HDF5 is in it.
#     The apt cache, $APT_CACHE, is a folder outside the chroots bind-mounted on their
#     /var/cache/apt/archives: a second run downloads nothing it already has (Qt, LibTorch and
#     HDF5 are ~200 MB). It holds .deb files only, which apt checks against the signed archive
#     index before use, so it changes no run's result; delete it at will.
#  2. Every run works on a fresh copy of the base (`cp -a` into $CHROOT_DIR/run.XXXXXX, removed at
#     the end), so no run sees what an earlier one installed. A copy rather than an overlay mount:
#     ~250 MB copy in a few seconds, and it works on any file system and in containers where
#     overlayfs is refused (e.g. when the chroot directory itself lies on an overlay).
#  3. In the copy: `apt-get update`, then `apt-get install ./poslens*.deb`, so apt takes every
#     Depends from the archive. The binaries are checked (ldd, --version) BEFORE the test tools
#     are installed: Xvfb and ImageMagick bring X11, font and image libraries of their own, which
#     could otherwise hide a library the packages use but do not declare. Then the tools are
#     installed (from the cached .debs) for the man page, desktop entry and GUI checks.
#  4. The mounts (/proc, /sys read-only, a new devpts instance, a tmpfs on /dev/shm) are made in
#     a private mount namespace (unshare) when possible, so they never show outside the script
#     and vanish even if it is killed; an EXIT trap also stops what still runs in the chroot and
#     unmounts them in any case. /dev is not bind-mounted: debootstrap's device nodes suffice.
# Exits 0 when every check passed, 1 with "FAIL [step]: ..." on the first failure, 2 on bad usage.
# shellcheck disable=SC2015,SC2016  # `cd && find || true` is meant; dpkg-query formats are literal
set -Eeuo pipefail

CHROOT_DIR=${CHROOT_DIR:-/work/chroot}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${SECURITY_MIRROR:-http://deb.debian.org/debian-security}
APT_CACHE=${APT_CACHE-$CHROOT_DIR/apt-archives}
SUITE=bookworm
# What the test itself needs inside the chroot; never Qt, LibTorch or HDF5.
TEST_TOOLS=(xvfb xauth x11-utils imagemagick man-db desktop-file-utils)
BASE_STAMP=etc/poslens-test-base  # inside the base: written when it is complete
FLIPFLOP_TEXT="w1i0i1i1r1i0i0w0i1i1i0i1i0i1r0i1i0i1i1i0i0i1r0"  # as scripts/gui.sh

screenshot=/tmp/poslens-deb-install.png
demo=flipflop-cope
wait_s=15
recommends=1
keep=0
self_test=0
rebuild_base=0
debs=()

usage() {
  sed -n '2,/^# Exits/p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

while (($#)); do
  case $1 in
    --suite) SUITE=${2:?--suite needs bookworm or trixie}; shift 2 ;;
    --suite=*) SUITE=${1#*=}; shift ;;
    --screenshot) screenshot=${2:?--screenshot needs a path}; shift 2 ;;
    --screenshot=*) screenshot=${1#*=}; shift ;;
    --demo) demo=${2:?--demo needs a name}; shift 2 ;;
    --demo=*) demo=${1#*=}; shift ;;
    --wait) wait_s=${2:?--wait needs seconds}; shift 2 ;;
    --wait=*) wait_s=${1#*=}; shift ;;
    --no-recommends) recommends=0; shift ;;
    --keep) keep=1; shift ;;
    --self-test) self_test=1; shift ;;
    --rebuild-base) rebuild_base=1; shift ;;
    -h|--help) usage ;;
    --) shift; debs+=("$@"); break ;;
    -*) echo "unknown option: $1" >&2; usage ;;
    *) debs+=("$1"); shift ;;
  esac
done

[[ $SUITE == bookworm || $SUITE == trixie ]] || { echo "--suite: bookworm or trixie" >&2; exit 2; }
BASE=${BASE:-$CHROOT_DIR/$SUITE}
if ((!self_test && ${#debs[@]} == 0)); then
  echo "no .deb given (or --self-test)" >&2
  usage
fi
[[ $wait_s =~ ^[0-9]+$ ]] || { echo "--wait: a whole number of seconds" >&2; exit 2; }
if ((EUID != 0)); then
  echo "must run as root (debootstrap, chroot and mounts)" >&2
  exit 2
fi
# Paths the user gave are made absolute before anything changes directory.
for i in "${!debs[@]}"; do
  [[ -f ${debs[$i]} ]] || { echo "no such file: ${debs[$i]}" >&2; exit 2; }
  debs[i]=$(realpath "${debs[i]}")
done
screenshot=$(realpath -m "$screenshot")

# Into a private mount namespace: the chroot's mounts stay invisible to the rest of the machine
# and are dropped by the kernel when the script ends, however it ends.
if [[ -z ${POSLENS_DEB_TEST_NS:-} ]] && unshare --mount --propagation private true 2>/dev/null; then
  export POSLENS_DEB_TEST_NS=1
  args=()
  ((self_test)) && args+=(--self-test)
  ((keep)) && args+=(--keep)
  ((rebuild_base)) && args+=(--rebuild-base)
  ((recommends)) || args+=(--no-recommends)
  args+=(--suite "$SUITE")
  exec unshare --mount --propagation private -- "$BASH" "$(realpath "$0")" "${args[@]}" \
    --screenshot "$screenshot" --demo "$demo" --wait "$wait_s" -- "${debs[@]}"
fi

step="start"
mounted=()   # mount points, in the order they were mounted
run_root=""  # this run's chroot copy

log() { printf '\n== %s\n' "$*"; }
begin() { step=$1; log "$1"; }
fail() { echo "FAIL [$step]: $*" >&2; exit 1; }
trap 'rc=$?; echo "FAIL [$step]: command exited $rc: $BASH_COMMAND" >&2; exit 1' ERR

# Runs a command inside chroot $1 with a clean environment: nothing of the host's (an
# LD_LIBRARY_PATH to a LibTorch build, QT_* settings) may leak in and make a broken package work.
in_chroot() {
  local root=$1
  shift
  chroot "$root" /usr/bin/env -i \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    TERM=dumb DEBIAN_FRONTEND=noninteractive XDG_RUNTIME_DIR=/tmp/runtime-root "$@"
}

mount_one() {  # mount_one TARGET mount-arguments...
  local target=$1
  shift
  mount "$@" "$target"
  mounted+=("$target")
}

mount_chroot() {
  local root=$1
  mount_one "$root/proc" -t proc proc
  mount_one "$root/sys" -t sysfs -o ro sysfs
  mount_one "$root/dev/pts" -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts
  mount_one "$root/dev/shm" -t tmpfs -o mode=1777,size=256m shm
  if [[ -n $APT_CACHE ]]; then
    mkdir -p "$APT_CACHE/partial"
    mount_one "$root/var/cache/apt/archives" --bind "$APT_CACHE"
  fi
  cp -L /etc/resolv.conf "$root/etc/resolv.conf"
}

# Stops whatever still runs with its root inside chroot $1 (Xvfb, the GUI): started by this
# script, and they would keep the mounts busy.
stop_chroot_processes() {
  local root pid pids=()
  root=$(realpath "$1")
  for pid in /proc/[0-9]*; do
    [[ $(readlink "$pid/root" 2>/dev/null) == "$root" ]] && pids+=("${pid#/proc/}")
  done
  ((${#pids[@]})) || return 0
  kill "${pids[@]}" 2>/dev/null || true
  sleep 1
  kill -9 "${pids[@]}" 2>/dev/null || true
}

unmount_all() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[$i]}" 2>/dev/null || umount -l "${mounted[$i]}" ||
      echo "warning: could not unmount ${mounted[$i]}" >&2
  done
  mounted=()
}

still_mounted_under() {  # true when anything is mounted at or below $1
  awk -v d="$(realpath "$1")" '$2 == d || index($2, d "/") == 1 { found = 1 } END { exit !found }' \
    /proc/self/mounts
}

cleanup() {
  local rc=$?
  trap - ERR
  set +e
  if [[ -n $run_root && -d $run_root ]]; then
    stop_chroot_processes "$run_root"
  fi
  [[ -d $BASE ]] && stop_chroot_processes "$BASE"
  unmount_all
  if [[ -n $run_root && -d $run_root ]]; then
    if ((keep)); then
      echo "kept this run's chroot: $run_root"
    elif still_mounted_under "$run_root"; then
      echo "warning: something is still mounted under $run_root; not deleting it" >&2
    else
      echo "removing this run's chroot $run_root"
      rm -rf --one-file-system "$run_root"
    fi
  fi
  exit "$rc"
}
trap cleanup EXIT

write_apt_config() {
  local root=$1
  : >"$root/etc/apt/sources.list"
  cat >"$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: $SUITE $SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY_MIRROR
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  cat >"$root/etc/apt/apt.conf.d/90poslens-test" <<'EOF'
Acquire::Retries "3";
APT::Keep-Downloaded-Packages "true";
EOF
  # No service may start inside the chroot (invoke-rc.d asks this first).
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod 755 "$root/usr/sbin/policy-rc.d"
}

# The pristine base: made once, reused (copied) by every run, never modified by one.
make_base() {
  if ((rebuild_base)) && [[ -e $BASE ]]; then
    begin "rebuild base: delete $BASE"
    still_mounted_under "$BASE" && fail "something is mounted under $BASE"
    rm -rf --one-file-system "$BASE"
  fi
  if [[ -n $APT_CACHE && -d $BASE/var/cache/apt/archives ]]; then
    # .debs in the base itself (one made without the shared cache) would be copied by every run
    # and hidden by the cache's mount: move them into the cache.
    mkdir -p "$APT_CACHE"
    find "$BASE/var/cache/apt/archives" -maxdepth 1 -name '*.deb' -exec mv -t "$APT_CACHE" {} +
  fi
  [[ -f $BASE/$BASE_STAMP ]] && return 0
  if [[ ! -e $BASE ]]; then
    begin "debootstrap $SUITE into $BASE"
    mkdir -p "$(dirname "$BASE")"
    debootstrap --variant=minbase "$SUITE" "$BASE" "$MIRROR" ||
      fail "debootstrap failed; delete $BASE (or pass --rebuild-base) and retry"
  elif [[ ! -x $BASE/usr/bin/apt-get || ! -f $BASE/etc/debian_version ]]; then
    fail "$BASE exists but is no finished debootstrap; pass --rebuild-base"
  fi
  begin "base: apt sources and the test tools' .debs (downloaded, not installed)"
  write_apt_config "$BASE"
  mount_chroot "$BASE"
  in_chroot "$BASE" apt-get update
  in_chroot "$BASE" apt-get install -y --no-install-recommends --download-only "${TEST_TOOLS[@]}"
  rm -f "$BASE/etc/resolv.conf"
  unmount_all
  stop_chroot_processes "$BASE"
  {
    echo "PosLens .deb install test base: debootstrap --variant=minbase $SUITE $MIRROR"
    echo "made $(date -u +%Y-%m-%dT%H:%M:%SZ); test tools cached, not installed: ${TEST_TOOLS[*]}"
  } >"$BASE/$BASE_STAMP"
}

new_run_chroot() {
  begin "fresh copy of the base"
  run_root=$(mktemp -d "$CHROOT_DIR/run.XXXXXX")
  cp -a "$BASE/." "$run_root/"
  chmod 755 "$run_root"
  rm -f "$run_root/$BASE_STAMP"
  echo "run chroot: $run_root ($(du -sh --one-file-system "$run_root" | cut -f1))"
  mount_chroot "$run_root"
  begin "apt-get update in the chroot"
  in_chroot "$run_root" apt-get update
}

install_test_tools() {
  begin "install the test tools (${TEST_TOOLS[*]})"
  in_chroot "$run_root" apt-get install -y --no-install-recommends "${TEST_TOOLS[@]}"
}

installed_packages() {
  in_chroot "$run_root" dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' |
    awk '$1 == "ii" { print $2 }' | sort
}

# Checks the screenshot is a real picture: an unrendered or black screen has no variation.
check_screenshot() {
  local inside=$1 sd
  in_chroot "$run_root" test -s "$inside" || fail "no screenshot written"
  sd=$(in_chroot "$run_root" convert "$inside" -format '%[fx:standard_deviation]' info:)
  echo "screenshot $(in_chroot "$run_root" identify -format '%wx%h' "$inside"), grey-level SD $sd"
  awk -v s="$sd" 'BEGIN { exit !(s > 0.02) }' || fail "the screenshot is (almost) one colour: $sd"
  mkdir -p "$(dirname "$screenshot")"
  cp "$run_root$inside" "$screenshot"
  echo "screenshot: $screenshot"
}

self_test_run() {
  install_test_tools
  begin "self-test: Xvfb, xdpyinfo, a window and import inside the chroot"
  cat >"$run_root/tmp/x-self-test.sh" <<'EOF'
set -eu
xdpyinfo | grep -E '^(name of display|  dimensions|  depth of root window)'
display -geometry +40+40 logo: &
pid=$!
for _ in $(seq 1 60); do
  xwininfo -root -tree | grep -qi 'ImageMagick' && break
  sleep 0.5
done
xwininfo -root -tree | grep -i 'ImageMagick' | head -3
sleep 1
import -window root /tmp/x-self-test.png
kill "$pid"
EOF
  in_chroot "$run_root" xvfb-run -a -s "-screen 0 1280x800x24" sh /tmp/x-self-test.sh
  check_screenshot /tmp/x-self-test.png
  begin "self-test: tools"
  in_chroot "$run_root" desktop-file-validate --help >/dev/null
  in_chroot "$run_root" man -w man >/dev/null
  echo "desktop-file-validate and man work"
  log "PASS: self-test (chroot, apt, Xvfb, import) in $run_root ($SECONDS s)"
}

package_test_run() {
  local deb pkgs=() kib total=0 before after new_pkgs upstream v
  begin "the .deb files"
  printf '%-44s %10s  %s\n' ".deb" "bytes" "package / version / Installed-Size"
  for deb in "${debs[@]}"; do
    dpkg-deb --info "$deb" >/dev/null || fail "not a .deb: $deb"
    pkgs+=("$(dpkg-deb -f "$deb" Package)")
    printf '%-44s %10s  %s %s %s KiB\n' "$(basename "$deb")" "$(stat -c %s "$deb")" \
      "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)" \
      "$(dpkg-deb -f "$deb" Installed-Size)"
    echo "  Depends: $(dpkg-deb -f "$deb" Depends)"
  done
  upstream=$(dpkg-deb -f "${debs[0]}" Version)
  upstream=${upstream#*:}
  upstream=${upstream%-*}

  new_run_chroot
  before=$(installed_packages)
  begin "apt-get install ./$(basename "${debs[0]}")... (Depends from the archive)"
  mkdir -p "$run_root/tmp/debs"
  cp "${debs[@]}" "$run_root/tmp/debs/"
  chmod -R a+rX "$run_root/tmp/debs"
  local apt_opts=(-y)
  ((recommends)) || apt_opts+=(--no-install-recommends)
  local rel=()
  for deb in "${debs[@]}"; do rel+=("./$(basename "$deb")"); done
  in_chroot "$run_root" sh -c 'cd /tmp/debs && apt-get install "$@"' sh "${apt_opts[@]}" "${rel[@]}"
  after=$(installed_packages)
  for p in "${pkgs[@]}"; do
    grep -qx "$p" <<<"$after" || fail "package $p is not installed after apt-get install"
  done

  begin "binaries: present, every library found"
  for b in poslens poslens-cli; do
    [[ -x $run_root/usr/bin/$b ]] || fail "/usr/bin/$b missing"
    if in_chroot "$run_root" ldd "/usr/bin/$b" | grep 'not found'; then
      fail "/usr/bin/$b: libraries not found (a missing Depends)"
    fi
  done
  echo "/usr/bin/poslens and /usr/bin/poslens-cli: every shared library resolved"

  begin "poslens-cli --version"
  v=$(in_chroot "$run_root" poslens-cli --version)
  echo "$v"
  [[ $v == *"$upstream"* ]] || fail "'$v' does not name the package's version $upstream"

  begin "poslens --version (QT_QPA_PLATFORM=offscreen)"
  v=$(in_chroot "$run_root" env QT_QPA_PLATFORM=offscreen poslens --version)
  echo "$v"
  [[ $v == *"$upstream"* ]] || fail "'$v' does not name the package's version $upstream"
  in_chroot "$run_root" env QT_QPA_PLATFORM=offscreen poslens --help | sed -n 1,3p

  local demo_dir=/usr/share/poslens/demos/$demo
  begin "poslens-cli info $demo_dir"
  if [[ ! -f $run_root$demo_dir/config.json ]]; then
    ls "$run_root/usr/share/poslens/demos" >&2 || true
    fail "no demo $demo_dir (config.json)"
  fi
  in_chroot "$run_root" poslens-cli info "$demo_dir"

  begin "poslens-cli run $demo_dir (LibTorch forward pass, HDF5 output)"
  local text=$FLIPFLOP_TEXT
  [[ $demo == flipflop-* ]] || text="The quick brown fox jumps over the lazy dog."
  in_chroot "$run_root" poslens-cli run "$demo_dir" --text "$text" --out /tmp/deb-test-run.h5
  [[ -s $run_root/tmp/deb-test-run.h5 ]] || fail "no HDF5 file written"
  echo "wrote /tmp/deb-test-run.h5 ($(stat -c %s "$run_root/tmp/deb-test-run.h5") bytes)"

  begin "which BLAS LibTorch got"
  in_chroot "$run_root" sh -c 'update-alternatives --query libblas.so.3-x86_64-linux-gnu 2>/dev/null |
    sed -n "s/^Value: //p"' || true
  grep -qx 'libopenblas0-openmp\|libopenblas0-pthread\|libopenblas0' <<<"$after" ||
    echo "note: no OpenBLAS installed: LibTorch runs on the reference BLAS (~40x slower," \
      "docs/performance.md); the packages might Depend on libopenblas0-openmp"

  new_pkgs=$(comm -13 <(echo "$before") <(echo "$after"))
  for p in $new_pkgs; do
    kib=$(in_chroot "$run_root" dpkg-query -W -f='${Installed-Size}' "$p")
    total=$((total + ${kib:-0}))
  done

  install_test_tools

  begin "man pages"
  for b in poslens poslens-cli; do
    in_chroot "$run_root" test -f "/usr/share/man/man1/$b.1.gz" ||
      fail "/usr/share/man/man1/$b.1.gz missing"
    in_chroot "$run_root" man -w "$b"
    in_chroot "$run_root" env MANWIDTH=80 man "$b" 2>&1 >/dev/null | grep . &&
      fail "man $b printed warnings"
  done
  in_chroot "$run_root" env MANWIDTH=80 man poslens-cli | sed -n 1,12p

  begin "desktop entry"
  local entries
  entries=$(cd "$run_root" && find usr/share/applications -name '*poslens*.desktop' 2>/dev/null || true)
  [[ -n $entries ]] || fail "no /usr/share/applications/*poslens*.desktop"
  for e in $entries; do
    in_chroot "$run_root" desktop-file-validate "/$e" || fail "/$e does not validate"
    echo "/$e validates"
  done

  begin "icon"
  local icons
  icons=$(cd "$run_root" && find usr/share/icons/hicolor usr/share/pixmaps \
    \( -path '*/apps/poslens.*' -o -path 'usr/share/pixmaps/poslens.*' \) 2>/dev/null | sort || true)
  [[ -n $icons ]] || fail "no poslens icon in /usr/share/icons/hicolor/*/apps or /usr/share/pixmaps"
  while read -r icon; do echo "/$icon"; done <<<"$icons"

  begin "GUI under Xvfb on $demo_dir"
  local gui_args=("$demo_dir" --text "$text" --run)
  [[ $demo == *cope* ]] && gui_args+=(--view hook_cope_gates)
  echo "poslens ${gui_args[*]}"
  cat >"$run_root/tmp/gui-test.sh" <<'EOF'
set -u
wait_s=$1
shift
mkdir -p -m 700 "$XDG_RUNTIME_DIR"
poslens "$@" >/tmp/poslens-gui.log 2>&1 &
pid=$!
shown=0
for _ in $(seq 1 120); do
  kill -0 "$pid" 2>/dev/null || break
  if xwininfo -root -tree | grep -q '"PosLens'; then shown=1; break; fi
  sleep 0.5
done
if [ "$shown" = 1 ]; then
  xwininfo -root -tree | grep '"PosLens' | head -3
  sleep "$wait_s"
fi
if ! kill -0 "$pid" 2>/dev/null; then
  wait "$pid"; echo "the GUI exited early (status $?); its output:"; cat /tmp/poslens-gui.log
  exit 1
fi
if [ "$shown" != 1 ]; then
  echo "no PosLens window within 60 s; its output:"; cat /tmp/poslens-gui.log
  kill "$pid"; exit 1
fi
import -window root /tmp/poslens-deb-install.png || { kill "$pid"; exit 1; }
kill "$pid"
wait "$pid" 2>/dev/null
echo "GUI output:"
cat /tmp/poslens-gui.log
exit 0
EOF
  in_chroot "$run_root" xvfb-run -a -s "-screen 0 1600x1000x24" \
    sh /tmp/gui-test.sh "$wait_s" "${gui_args[@]}" || fail "the GUI test failed (output above)"
  check_screenshot /tmp/poslens-deb-install.png

  begin "sizes"
  for deb in "${debs[@]}"; do
    printf '  %-44s %s\n' "$(basename "$deb")" "$(du -h "$deb" | cut -f1) ($(stat -c %s "$deb") bytes)"
  done
  for p in "${pkgs[@]}"; do
    printf '  installed %-34s %s KiB\n' "$p" \
      "$(in_chroot "$run_root" dpkg-query -W -f='${Installed-Size}' "$p")"
  done
  echo "  $(wc -w <<<"$new_pkgs") packages installed by apt for the .debs (themselves included)," \
    "$((total / 1024)) MiB installed in all (Installed-Size sum; test tools not counted)"
  log "PASS: every check of ${pkgs[*]} passed ($SECONDS s)"
}

SECONDS=0
make_base
if ((self_test)); then
  new_run_chroot
  self_test_run
else
  package_test_run
fi
