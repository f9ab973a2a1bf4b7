#!/usr/bin/env bash
# One idempotent setup for a fresh Debian 12 machine (as root), CI and developers alike:
# Debian packages for the build, Slurm and munge for the end-to-end tests, the default corpus
# (python3.11-doc), Prometheus and headless Chromium for the monitoring tests, and the project venvs
# (the pinned LibTorch wheel: scripts/requirements.lock; TensorBoard and tiktoken:
# scripts/requirements-tools.lock).
# A second run checks and returns in seconds without downloading anything.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")

log() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root (it installs Debian packages); developers without root: see README"
[ -r /etc/debian_version ] || die "this script expects Debian 12"

apt_packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libboost-dev libboost-system-dev libyaml-cpp-dev libssl-dev libxxhash-dev libsystemd-dev catch2 libgloo-dev
  libblis-openmp-dev
  libslurm-dev slurm-wlm slurmctld slurmd slurm-client munge
  iproute2 util-linux procps psmisc openssl acl
  python3 python3-venv python3.11-doc
  dpkg-dev debhelper lintian rpm systemd-container
  prometheus chromium-headless-shell
)

missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  log "Debian packages: all ${#apt_packages[@]} present"
fi

# Each venv lives in a cache keyed by its lock file, so fresh clones (CI) reuse it; a link in the
# project root points at it. Debian's own python3 builds it, so a stock machine behaves the same.
#   .venv        the pinned torch wheel (LibTorch for the build), the pyarrow wheel (Arrow C++ for the
#                trainer's dataset reader), transformers and datasets for parity tests
#   .venv-tools  TensorBoard, to look at training curves and to read them back in the tests, and
#                tiktoken for tokenizer-encode-bench; apart from .venv so adding a tool never
#                re-downloads the torch wheel
cache=${LLM_RDZV_CACHE:-/var/cache/llm-rdzv}
make_venv() {  # make_venv LOCK_FILE LINK_NAME PYTHON_IMPORTS
  local lock=$1 link=$2 imports=$3
  local venv="$cache/${link#.}-$(sha256sum "$lock" | cut -c1-16)"
  if [ ! -f "$venv/.complete" ]; then
    log "creating $venv from $(basename "$lock") (PyPI)"
    rm -rf "$venv"
    mkdir -p "$cache"
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$lock"
    "$venv/bin/python" -c "import $imports" || die "the packages of $venv do not import"
    touch "$venv/.complete"
  else
    log "$link: $venv ready"
  fi
  ln -sfn "$venv" "$root/$link"
}
make_venv "$here/requirements.lock" .venv 'torch, transformers, tokenizers, safetensors, datasets, pyarrow'
make_venv "$here/requirements-tools.lock" .venv-tools 'tensorboard, tiktoken'

corpus=/usr/share/doc/python3.11/html/_sources
[ -d "$corpus" ] || die "default corpus $corpus missing after installing python3.11-doc"
log "done"
