#!/usr/bin/env bash
# Installs every Debian package PosLens needs to build, test and run. Idempotent.
# `setup.sh --release-tools` also installs what the hardening and release work needs beyond the
# suite (docs/reliability.md): clang-14 + libFuzzer (scripts/fuzz.sh), debootstrap and
# desktop-file-utils (scripts/test_deb_install.sh), dpkg-dev (cpack's dpkg-shlibdeps).
# OpenBLAS matters: without it Debian's LibTorch uses the reference BLAS (~40x slower). Its
# OpenMP build is selected: LibTorch's operators run on OpenMP threads, and the pthread build's
# own spinning threads fight them for the cores (2.7x slower forward on 2 cores;
# docs/performance.md). core/base/threads.cpp copes when the pthread build is loaded anyway.
# Then the Python venv of scripts/python-requirements.txt (every package pinned): the PyTorch
# wheel whose LibTorch 2.x + CUDA the second build links (scripts/build_cuda.sh), and HF
# transformers, tokenizers, safetensors and TransformerLens for the reference scripts. It goes to
# $POSLENS_VENV (default ~/.local/share/poslens/venv), is brought to the pins when the requirements
# change, and is skipped with `setup.sh --no-venv` (the Debian build alone needs none of it).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config
  qt6-base-dev qt6-svg-dev libqcustomplot-dev
  libtorch-dev libopenblas0-openmp
  libhdf5-dev ccache hdf5-tools nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev  # libgmock-dev: trixie's libgtest-dev no longer pulls it in
  libpcre2-dev libicu-dev  # HF tokenizer.json: PCRE2 regexes, ICU Unicode data
  libssl-dev  # SHA-256 of the weights in every analysis file (libcrypto)
  xvfb xauth imagemagick
  time  # GNU time -v: peak RSS in scripts/bench_long.sh
  python3-torch python3-h5py python3-numpy
  python3-sentencepiece  # tools/make_spm_reference.py (test data only; never linked)
  fortunes  # the default corpus of the character-LM task (docs/training.md)
  slurm-wlm munge  # the sweep's Slurm test: a single-node cluster on localhost (tests/slurm)
)
with_venv=1
for arg in "$@"; do
  case $arg in
    --release-tools) packages+=(clang-14 libfuzzer-14-dev debootstrap desktop-file-utils dpkg-dev) ;;
    --no-venv) with_venv=0 ;;
    *) echo "usage: setup.sh [--release-tools] [--no-venv]" >&2; exit 2 ;;
  esac
done
((with_venv)) && packages+=(python3-venv)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi

# Point libblas/liblapack/libopenblas at the OpenMP build (Debian's alternatives prefer the
# pthread build when both are installed).
arch_dir=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
for lib in libblas.so.3 liblapack.so.3 libopenblas.so.0; do
  target="$arch_dir/openblas-openmp/$lib"
  name="$lib-$(basename "$arch_dir")"
  if [ -e "$target" ] && [ "$(readlink -f "$arch_dir/$lib")" != "$(readlink -f "$target")" ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO=sudo
    echo "setup: selecting $target for $lib"
    $SUDO update-alternatives --set "$name" "$target"
  fi
done

# ccache's default 5 GB is too small for the two builds: each target's precompiled header is a
# 0.7 GB .gch (~0.1 GB compressed in the cache), ccache splits its limit over 16 folders (~0.3 GB
# each at 5 GB) and evicts whenever one overflows, and an evicted header makes every object built
# on it miss (GCC writes a new .gch with new bytes, and the objects hash the .gch). 30 GB keeps
# both builds' objects, so a clean clone (CI) rebuilds from the cache.
if command -v ccache >/dev/null; then
  max=$(ccache --get-config max_size 2>/dev/null || echo 0)
  case $max in
    *T|[3-9][0-9]G|[1-9][0-9][0-9]G|[3-9][0-9].*G|[1-9][0-9][0-9].*G) ;;  # already 30 GB or more
    *) echo "setup: ccache max_size $max -> 30G"; ccache --max-size 30G >/dev/null ;;
  esac
fi

# The pinned venv. A stamp (a copy of the requirements) says it is complete and current.
if ((with_venv)); then
  venv=${POSLENS_VENV:-$HOME/.local/share/poslens/venv}
  requirements=scripts/python-requirements.txt
  if cmp -s "$requirements" "$venv/poslens-requirements.txt"; then
    echo "setup: venv $venv is current"
  else
    # An existing venv is brought to the pins (pip installs what is missing or differs: minutes,
    # not the ~5 GB of wheels again); a missing or broken one is made afresh.
    if [[ -x $venv/bin/pip ]] && "$venv/bin/python" -c "import sys" 2>/dev/null; then
      echo "setup: bringing the venv $venv to $requirements"
    else
      echo "setup: making the venv $venv from $requirements (~5 GB, the CUDA wheels included)"
      rm -rf "$venv"
      /usr/bin/python3 -m venv "$venv"
    fi
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
    cp "$requirements" "$venv/poslens-requirements.txt"
  fi
fi
