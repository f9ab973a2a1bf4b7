#!/usr/bin/env bash
# Configures and builds the project with Ninja.
#   scripts/build.sh                 everything into build/ (binaries in build/bin)
#   scripts/build.sh --sanitize      ASan+UBSan build of the non-LibTorch parts into build-asan/
#   scripts/build.sh --target T ...  only target T (repeatable; the main job builds what it runs:
#                                    trainer, the plugin llm_rdzv, rdzvd and rdzvctl)
# Extra arguments after -- go to cmake's configure step (e.g. -- -DLLMRDZV_WITH_SLURM=OFF).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir="$root/build"
args=(-DLLMRDZV_WERROR=ON)
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --target) targets+=(--target "${2:?--target needs a target name}"); shift ;;
    --sanitize) dir="$root/build-asan"; args+=(-DLLMRDZV_SANITIZE=ON -DLLMRDZV_WITH_TORCH=OFF -DLLMRDZV_WITH_SLURM=OFF -DCMAKE_BUILD_TYPE=Debug) ;;
    --dir) dir="$2"; shift ;;
    --) shift; args+=("$@"); break ;;
    *) echo "build.sh: unknown argument '$1' (see the header of this script)" >&2; exit 2 ;;
  esac
  shift
done
# ccache: paths relative to the checkout, so every build dir and clone at one path share hits.
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=true
cmake -S "$root" -B "$dir" -G Ninja "${args[@]}" >/dev/null
# Torch translation units need ~1.1 GB each; two jobs fit this 2-core, 24 GiB machine.
cmake --build "$dir" -j "${LLMRDZV_BUILD_JOBS:-$(nproc)}" "${targets[@]}"
