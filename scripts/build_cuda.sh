#!/usr/bin/env bash
# Builds PosLens against the LibTorch of a Python PyTorch 2.x (the pip wheel, with CUDA): what a
# GPU server runs. Core + poslens-cli (+ the core tests, + the GUI where Qt 6 is there), in
# build-cuda/ by default. docs/building.md has the details; Debian 12's own LibTorch 1.13 build
# (with the GUI, the .deb) is scripts/build.sh.
#
#   scripts/build_cuda.sh [OPTIONS] [-- EXTRA_CMAKE_ARGS...]
#
# Options:
#   --python PY      the Python whose torch is used (default: $POSLENS_VENV/bin/python, the venv
#                    scripts/setup.sh makes, when it exists; else python3)
#   --build-dir DIR  where to build (default build-cuda)
#   --build-type T   CMAKE_BUILD_TYPE (default Release: -O3, no debug info, ~25 % less compile
#                    time than RelWithDebInfo; RelWithDebInfo for a debugger)
#   --gui auto|on|off  the Qt GUI too (default auto: on where Qt 6 Widgets is installed)
#   --no-tests       only core + CLI (default: also poslens_core_tests)
#   --target T       build only target T (repeatable; e.g. poslens-cli first, the tests later
#                    with cmake --build), the configuration staying as the options say
#   --deps TARBALL   the .tar.xz made by scripts/pack_build_deps.sh: headers and
#                    libraries of HDF5, ICU, PCRE2, OpenSSL, CLI11, nlohmann-json and GoogleTest
#                    for a machine with no -dev packages and no network (it is unpacked into the
#                    build folder, never into /; the binaries find its libraries by RPATH)
#   --no-install     never install packages; say which are missing and stop
#   --jobs N         parallel compile jobs (default: nproc)
#   --cuda-arch LIST TORCH_CUDA_ARCH_LIST for torch's CMake config (default: the GPU's, read with
#                    nvidia-smi, where there is one; else torch's own default)
# Checks first, each failure one message and exit 1: torch >= 2 importable; its C++ ABI is the
# C++11 one (the distribution's HDF5/ICU C++ libraries use it); g++ >= 9; for a CUDA wheel, nvcc
# of the same CUDA major version (torch's CMake config needs the toolkit to configure). Then on
# Debian/Ubuntu without --deps it installs what is missing (apt-get; root or sudo).
# Prints the path of poslens-cli last. Exit 0 on success, 1 on failure, 2 on bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."
source_dir=$(pwd)

python=""
build_dir=build-cuda
build_type=Release
gui=auto
tests=ON
deps=""
install=1
jobs=$(nproc)
cuda_arch=""
extra=()
only_targets=()

usage() { sed -n '2,/^# Prints/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
fail() { echo "build_cuda: $*" >&2; exit 1; }
while (($#)); do
  case $1 in
    --python) python=${2:?}; shift 2 ;;
    --build-dir) build_dir=${2:?}; shift 2 ;;
    --build-type) build_type=${2:?}; shift 2 ;;
    --gui) gui=${2:?}; shift 2 ;;
    --no-tests) tests=OFF; shift ;;
    --target) only_targets+=("${2:?}"); shift 2 ;;
    --deps) deps=${2:?}; shift 2 ;;
    --no-install) install=0; shift ;;
    --jobs) jobs=${2:?}; shift 2 ;;
    --cuda-arch) cuda_arch=${2:?}; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) usage ;;
    *) echo "build_cuda: unknown argument $1" >&2; usage ;;
  esac
done
[[ $gui =~ ^(auto|on|off)$ ]] || usage
[[ $jobs =~ ^[1-9][0-9]*$ ]] || usage

# --- torch ------------------------------------------------------------------------------------
if [[ -z $python ]]; then
  venv=${POSLENS_VENV:-$HOME/.local/share/poslens/venv}
  if [[ -x $venv/bin/python ]]; then python=$venv/bin/python; else python=python3; fi
fi
command -v "$python" >/dev/null || fail "no Python at '$python' (--python PY, or scripts/setup.sh makes the venv)"
probe='import torch
print(torch.__version__)
print(torch.version.cuda or "")
print(int(torch._C._GLIBCXX_USE_CXX11_ABI))
print(torch.utils.cmake_prefix_path)'
info=$("$python" -c "$probe" 2>&1) || fail "no usable torch in $python: ${info##*$'\n'}"
mapfile -t t <<<"$info"
torch_version=${t[0]} torch_cuda=${t[1]} cxx11_abi=${t[2]} torch_cmake=${t[3]}
echo "build_cuda: torch $torch_version (CUDA ${torch_cuda:-none}) from $python"
((${torch_version%%.*} >= 2)) ||
  fail "torch $torch_version: this build is for LibTorch 2.x; Debian's LibTorch 1.13 build is scripts/build.sh"
((cxx11_abi == 1)) ||
  fail "torch $torch_version uses the pre-C++11 ABI: the distribution's C++ libraries (HDF5, ICU) cannot link with it; use a wheel with the C++11 ABI (every PyPI wheel since 2.6)"
[[ -f $torch_cmake/Torch/TorchConfig.cmake ]] || fail "no TorchConfig.cmake under $torch_cmake"

# --- compiler and CUDA toolkit ---------------------------------------------------------------
cxx=${CXX:-g++}
command -v "$cxx" >/dev/null || fail "no C++ compiler '$cxx' (apt-get install build-essential)"
gcc_major=$("$cxx" -dumpversion | cut -d. -f1)
if "$cxx" --version | grep -q 'Free Software Foundation'; then
  ((gcc_major >= 9)) || fail "$cxx $gcc_major: LibTorch 2.x needs g++ >= 9"
fi
echo "build_cuda: compiler $("$cxx" --version | head -1)"
cuda_args=()
if [[ -n $torch_cuda ]]; then
  nvcc=${CUDACXX:-$(command -v nvcc || true)}
  for candidate in "${CUDA_HOME:-}/bin/nvcc" /usr/local/cuda/bin/nvcc; do
    [[ -z $nvcc && -x $candidate ]] && nvcc=$candidate
  done
  [[ -n $nvcc ]] || fail "torch $torch_version is built for CUDA $torch_cuda and its CMake config needs that CUDA toolkit (nvcc) to configure: install CUDA ${torch_cuda%%.*}.x (or set CUDA_HOME), or use a CPU-only wheel"
  nvcc_version=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\),.*/\1/p')
  [[ ${nvcc_version%%.*} == "${torch_cuda%%.*}" ]] ||
    fail "$nvcc is CUDA $nvcc_version but torch was built for CUDA $torch_cuda: use a toolkit of CUDA ${torch_cuda%%.*}.x (CUDA_HOME or CUDACXX)"
  echo "build_cuda: CUDA toolkit $nvcc_version ($nvcc)"
  cuda_args+=(-DCMAKE_CUDA_COMPILER="$nvcc" -DCUDAToolkit_ROOT="$(dirname "$(dirname "$nvcc")")")
  if [[ -z $cuda_arch ]] && command -v nvidia-smi >/dev/null; then
    cuda_arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | sort -u | paste -sd';' || true)
  fi
  [[ -n $cuda_arch ]] && cuda_args+=(-DTORCH_CUDA_ARCH_LIST="$cuda_arch")
fi

# --- Qt (the GUI) ------------------------------------------------------------------------------
if [[ $gui == auto ]]; then
  gui=off
  compgen -G "/usr/lib/*/cmake/Qt6Widgets/Qt6WidgetsConfig.cmake" >/dev/null && gui=on
fi
gui_flag=$([[ $gui == on ]] && echo ON || echo OFF)

# --- the other libraries ----------------------------------------------------------------------
prefix_path="$torch_cmake"
dep_args=()
mkdir -p "$build_dir"
build_dir=$(cd "$build_dir" && pwd)
if [[ -n $deps ]]; then
  # A prefix of Debian packages unpacked (scripts/pack_build_deps.sh): point CMake and pkg-config at it.
  [[ -f $deps ]] || fail "--deps $deps: no such file (the .tar.xz of scripts/pack_build_deps.sh)"
  rm -rf "$build_dir/deps" && mkdir -p "$build_dir/deps"
  tar -C "$build_dir/deps" -xJf "$deps" || fail "cannot unpack $deps"
  d=$build_dir/deps/prefix
  lib=$d/usr/lib/x86_64-linux-gnu
  [[ -d $lib ]] || fail "$deps holds no usr/lib/x86_64-linux-gnu (made by scripts/pack_build_deps.sh?)"
  sed -i "s#/usr#$d/usr#g" "$lib"/pkgconfig/*.pc "$d"/usr/share/pkgconfig/*.pc
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s/usr/bin/pkgconf "$@"\n' "$lib" "$d" >"$build_dir/pkg-config"
  chmod +x "$build_dir/pkg-config"
  export PKG_CONFIG_PATH=$lib/pkgconfig:$d/usr/share/pkgconfig
  prefix_path="$prefix_path;$d/usr"
  dep_args+=(-DHDF5_ROOT="$lib/hdf5/serial" -DICU_ROOT="$d/usr" -DOPENSSL_ROOT_DIR="$d/usr"
    -DPKG_CONFIG_EXECUTABLE="$build_dir/pkg-config"
    -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,$lib -Wl,-rpath-link,$lib/hdf5/serial"
    -DCMAKE_BUILD_RPATH="$lib;$lib/hdf5/serial")
  echo "build_cuda: libraries from $d"
elif command -v dpkg-query >/dev/null; then
  packages=(cmake ninja-build pkg-config ccache libhdf5-dev nlohmann-json3-dev libcli11-dev
    libpcre2-dev libicu-dev libssl-dev)
  [[ $tests == ON ]] && packages+=(libgtest-dev libgmock-dev)
  [[ $gui == on ]] && packages+=(qt6-base-dev qt6-svg-dev libqcustomplot-dev)
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    ((install)) || fail "missing packages: ${missing[*]} (apt-get install ${missing[*]})"
    sudo=""
    ((EUID == 0)) || sudo=sudo
    echo "build_cuda: installing ${missing[*]}"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
fi
policy=()
cmake_major=$(cmake --version | sed -n 's/cmake version \([0-9]*\).*/\1/p')
# CMake 4 refuses configs that ask for CMake < 3.5 (some of the distributions' packages do).
((cmake_major >= 4)) && policy=(-DCMAKE_POLICY_VERSION_MINIMUM=3.5)
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)

# --- configure and build ------------------------------------------------------------------------
echo "build_cuda: configuring $build_dir ($build_type, GUI $gui_flag, tests $tests)"
cmake -S "$source_dir" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE="$build_type" \
  -DCMAKE_PREFIX_PATH="$prefix_path" -DTorch_DIR="$torch_cmake/Torch" \
  -DPOSLENS_BUILD_GUI="$gui_flag" -DPOSLENS_BUILD_TESTS="$tests" -DPOSLENS_BUILD_BENCH=OFF \
  "${cuda_args[@]}" "${dep_args[@]}" "${policy[@]}" "${extra[@]}" >"$build_dir/configure.log" 2>&1 ||
  { tail -n 30 "$build_dir/configure.log" >&2; fail "cmake failed (whole log: $build_dir/configure.log)"; }
grep -E 'PosLens: LibTorch' "$build_dir/configure.log" | sed 's/^-- /build_cuda: /'
targets=(poslens-cli)
[[ $tests == ON ]] && targets+=(poslens_core_tests)
[[ $gui_flag == ON ]] && targets+=(poslens)
((${#only_targets[@]})) && targets=("${only_targets[@]}")
cmake --build "$build_dir" --parallel "$jobs" --target "${targets[@]}"
echo "build_cuda: built ${targets[*]}; the CLI:"
echo "$build_dir/app/cli/poslens-cli"
