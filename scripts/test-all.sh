#!/usr/bin/env bash
# The one command that sets up, builds and runs every test (what CI runs through .ci/run):
# setup → full build → ctest (unit, integration, Slurm end-to-end, trainer) → ASan+UBSan build
# of the non-LibTorch parts → ctest on it.
#   scripts/test-all.sh                      what CI runs
#   scripts/test-all.sh --trainer-packages   also builds, installs and checks the llm-rdzv-trainer
#                                            .deb and RPM (about 50 min more of compiling, cold)
set -euo pipefail
case "${1:-}" in
  "") ;;
  --trainer-packages) export LLMRDZV_TRAINER_PACKAGES=1 ;;
  *) echo "test-all.sh: unknown argument '$1' (see the header of this script)" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
start=$(date +%s)
stage() { printf '\n=== %s (%ss)\n' "$*" "$(( $(date +%s) - start ))"; }

stage setup;            scripts/setup.sh
stage build;            scripts/build.sh
stage tests;            ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 900
stage "sanitizer build"; scripts/build.sh --sanitize
# The 512-process membership test runs in the normal build only: under ASan its 512 channels'
# handshakes outlast the client's connect budget on 2 cores (seen at load > 20).
stage "sanitizer tests"; ctest --test-dir build-asan --output-on-failure -j "$(nproc)" --timeout 900 \
                           -E '512 participants in 8 processes' 
stage "all green"
