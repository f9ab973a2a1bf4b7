#!/usr/bin/env bash
# Builds the Debian packages with dpkg-buildpackage from a clean export of this source tree
# (packaging/debian becomes debian/), then checks them with lintian.
#
#   packaging/build-deb.sh --out DIR [--no-trainer] [--worktree] [--venv PATH]
#
#   --out DIR      where the .deb files (and the build log) go
#   --no-trainer   build profile pkg.llm-rdzv.notrainer: only llm-rdzv (no LibTorch needed)
#   --worktree     package the working tree's tracked files instead of the committed HEAD
#   --venv PATH    venv with the pinned torch wheel for llm-rdzv-trainer (default: .venv)
# DEB_BUILD_OPTIONS is honoured (default: parallel=<nproc> noddebs).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out= profile= worktree=0 venv="$root/.venv"

die() { printf 'build-deb: error: %s\n' "$*" >&2; exit 1; }
usage() { sed -n '5,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || usage; out=$2; shift ;;
    --no-trainer) profile=pkg.llm-rdzv.notrainer ;;
    --worktree) worktree=1 ;;
    --venv) [ $# -ge 2 ] || usage; venv=$2; shift ;;
    *) usage ;;
  esac
  shift
done
[ -n "$out" ] || usage
for tool in dpkg-buildpackage dh lintian git; do
  command -v "$tool" >/dev/null || die "$tool is missing (scripts/setup.sh installs it)"
done
if [ -z "$profile" ]; then
  [ -x "$venv/bin/python" ] || die "no venv at $venv for the trainer package (--venv, or --no-trainer)"
  venv=$(cd "$venv" && pwd -P)
fi

version=$(dpkg-parsechangelog -l "$root/packaging/debian/changelog" -S Version)
mkdir -p "$out"
out=$(cd "$out" && pwd)
# A fixed staging path (per --out) keeps compiler command lines stable, so ccache serves a rebuild.
stage="$out/.stage"
rm -rf "$stage"
trap 'rm -rf "$stage"' EXIT
src="$stage/llm-rdzv-$version"
mkdir -p "$src"

# A package is built from what is committed, like a release; --worktree for work in progress.
if [ "$worktree" = 1 ]; then
  git -C "$root" ls-files -z --cached | (cd "$root" && tar --null -T - -cf -) | tar -xf - -C "$src"
else
  git -C "$root" archive --format=tar HEAD | tar -xf - -C "$src"
fi
cp -a "$src/packaging/debian" "$src/debian"

log="$out/dpkg-buildpackage.log"
echo "build-deb: building llm-rdzv $version${profile:+ (profile $profile)} in $src, log in $log"
(
  cd "$src"
  export DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-"parallel=$(nproc) noddebs"}
  # debhelper points HOME at a scratch directory; keep using the caller's compiler cache. Paths
  # relative to the staged tree let builds into different --out directories share cache hits.
  if command -v ccache >/dev/null; then
    export CCACHE_DIR=${CCACHE_DIR:-$(ccache -k cache_dir)} CCACHE_BASEDIR="$src" CCACHE_NOHASHDIR=true
  fi
  [ -z "$profile" ] && export LLMRDZV_VENV="$venv"
  dpkg-buildpackage -b -us -uc ${profile:+-P"$profile"}
) >"$log" 2>&1 || { tail -n 40 "$log" >&2; die "dpkg-buildpackage failed (full log: $log)"; }

rm -f "$out"/*.deb
mv "$stage"/*.deb "$out"/
echo "build-deb: built $(cd "$out" && ls *.deb | tr '\n' ' ')"

# Warnings fail too; the only accepted tags are overridden with a reason in debian/*.lintian-overrides.
lintian --fail-on error,warning --tag-display-limit 0 "$out"/*.deb
echo "build-deb: lintian clean"
