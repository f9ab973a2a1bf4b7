#!/usr/bin/env bash
# Builds this tree with -Werror under Debian 13's newer toolchain and libraries (g++ 13 or 14,
# CMake 3.31, Slurm 24.11, BLIS 1.1, Boost 1.83), in a chroot beside the project, so that a
# compiler or library release a site has cannot break the build unseen: Debian 12 has g++ 12 only.
#   scripts/newer-toolchain-check.sh [13|14]     (as root; default 13; ~45 minutes cold on 2 cores)
# The chroot (debootstrap, ~1.5 GB) stays in $LLM_RDZV_CACHE/trixie-root for the next run. It
# builds against this checkout's torch venv (its facts are read here and handed to CMake inside,
# where the venv's Python cannot run) and Debian 12's Catch2 2.x headers (Debian 13 has 3.x).
# What this checks is the compiling: Debian 13's protobuf and gRPC are built with g++ 14, so with
# g++ 13 the binaries that link them fail to link (__cxa_call_terminate@CXXABI_1.3.15, the same
# for a three-line program); the others can be run inside the chroot from /root/b<version>/tests.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
version=${1:-13}
case "$version" in 13 | 14) ;; *) echo "newer-toolchain-check: g++ version 13 or 14, not '$version'" >&2; exit 2 ;; esac
[ "$(id -u)" -eq 0 ] || { echo "newer-toolchain-check: run as root (debootstrap, chroot, mounts)" >&2; exit 1; }
[ -x "$root/.venv/bin/python" ] || { echo "newer-toolchain-check: run scripts/setup.sh first (the torch venv)" >&2; exit 1; }
chroot_dir=${LLM_RDZV_CACHE:-/var/cache/llm-rdzv}/trixie-root
packages=(g++-13 g++-14 cmake ninja-build pkg-config libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev
          protobuf-compiler libboost-dev libboost-system-dev libyaml-cpp-dev libssl-dev libxxhash-dev
          libsystemd-dev libgloo-dev libblis-openmp-dev libslurm-dev python3)

if [ ! -f "$chroot_dir/.complete" ]; then
  command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null
  debootstrap --variant=minbase trixie "$chroot_dir" http://deb.debian.org/debian >/dev/null
  cp /etc/resolv.conf "$chroot_dir/etc/"
  chroot "$chroot_dir" bash -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ${packages[*]} >/dev/null"
  # Catch2 2.x as this tree uses it: Debian 12's headers and CMake package.
  dpkg -L catch2 | while read -r f; do
    [ -f "$f" ] && [[ "$f" != /usr/share/doc/* ]] && install -D -m 644 "$f" "$chroot_dir$f"
  done
  touch "$chroot_dir/.complete"
fi

# The same paths inside as outside: the checkout, its venv (through the cache) and CUDA.
venv=$(readlink -f "$root/.venv")
mounted=()
cleanup() { for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount "${mounted[i]}"; done; }
trap cleanup EXIT
for d in /proc /dev "$root" "$venv" /usr/local/cuda; do
  [ -e "$d" ] || continue
  mkdir -p "$chroot_dir$d"
  mount --bind "$(readlink -f "$d")" "$chroot_dir$d"
  mounted+=("$chroot_dir$d")
done
facts=$("$root/.venv/bin/python" -c "import torch, os; print(torch.utils.cmake_prefix_path); print(os.path.dirname(os.path.dirname(torch.__file__))); print(torch.__version__); print(torch.version.cuda or 'none')")
printf '#!/bin/sh\n# What import torch printed outside this chroot.\ncat <<"EOF"\n%s\nEOF\n' "$facts" > "$chroot_dir/usr/local/bin/torch-facts"
chmod +x "$chroot_dir/usr/local/bin/torch-facts"

chroot "$chroot_dir" env CC="gcc-$version" CXX="g++-$version" CUDAHOSTCXX="g++-$version" bash -c "
  set -e
  cmake -S '$root' -B /root/b$version -G Ninja -DLLMRDZV_WERROR=ON -DLLMRDZV_TORCH_PYTHON=/usr/local/bin/torch-facts \
    > /root/b$version.configure.log 2>&1 || { tail -20 /root/b$version.configure.log; exit 1; }
  cmake --build /root/b$version -j \$(nproc) -- -k 0 > /root/b$version.log 2>&1 || true
  grep -E 'error:|warning:' /root/b$version.log | grep -v -e __cxa_call_terminate -e 'ld returned' | sort -u || true
  echo \"newer-toolchain-check: g++ $version: \$(grep -c '^FAILED' /root/b$version.log || true) failed build steps (log: $chroot_dir/root/b$version.log)\"
"
