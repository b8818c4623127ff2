#!/usr/bin/env bash
# Packs the Debian 12 packages the GUI-less build compiles and links against (HDF5, ICU, PCRE2,
# OpenSSL, CLI11, nlohmann-json, GoogleTest and the libraries they pull in) into one tarball, for
# a GPU machine whose image has a pip PyTorch but no -dev packages and no network:
# `scripts/build_cuda.sh --deps TARBALL` unpacks it into the build folder and points CMake and
# pkg-config at it (docs/building.md). Never unpack it into / on that machine.
#
#   scripts/pack_build_deps.sh [OUT_DIR]     # default .gpu; writes OUT_DIR/deps.tar.xz (~20 MB)
#
# Runs on Debian 12 (apt-get download needs the archive, not root). Exits 1 when a package
# cannot be downloaded, 2 on bad usage.
set -euo pipefail
case ${1:-} in -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;; -*) echo "unknown option: $1" >&2; exit 2 ;; esac
out=${1:-.gpu}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

packages=(
  # what CMake finds
  libhdf5-dev libhdf5-103-1 libhdf5-cpp-103-1 libhdf5-hl-100 libhdf5-hl-cpp-100
  libhdf5-fortran-102 libhdf5-hl-fortran-100 libsz2 libaec0 libaec-dev zlib1g-dev
  libicu-dev libicu72 libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3
  libssl-dev libssl3 nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev googletest
  pkgconf pkgconf-bin libpkgconf3
  # what libhdf5-dev's curl and jpeg dependencies link
  libcurl4 libcurl4-openssl-dev libjpeg62-turbo libjpeg62-turbo-dev libjpeg-dev libbrotli1
  libcom-err2 libffi8 libgmp10 libgnutls30 libgssapi-krb5-2 libhogweed6 libidn2-0 libk5crypto3
  libkeyutils1 libkrb5-3 libkrb5support0 libldap-2.5-0 libnettle8 libnghttp2-14 libp11-kit0
  libpsl5 librtmp1 libsasl2-2 libsasl2-modules-db libdb5.3 libssh2-1 libtasn1-6 libunistring2
  libzstd1 libquadmath0
)
(cd "$work" && apt-get download "${packages[@]}" >"$work/download.log" 2>&1) || {
  echo "pack_build_deps: apt-get download failed:" >&2
  tail -5 "$work/download.log" >&2
  exit 1
}
mkdir "$work/prefix"
for deb in "$work"/*.deb; do dpkg -x "$deb" "$work/prefix"; done
rm -rf "$work"/prefix/usr/share/{doc,man,locale,info,lintian}
# Shared libraries only, but GoogleTest's static ones (Debian ships no shared gtest).
find "$work/prefix" -name '*.a' ! -name 'libgtest*' ! -name 'libgmock*' -delete
tar -C "$work" -cJf "$out/deps.tar.xz.part" prefix
mv "$out/deps.tar.xz.part" "$out/deps.tar.xz"
echo "wrote $out/deps.tar.xz ($(du -h "$out/deps.tar.xz" | cut -f1))"
