#!/usr/bin/env bash
# A real `rpmbuild -bb` of packaging/rpm/llm-rdzv.spec on this Debian host, from a tarball of the
# committed tree (as `rpmbuild -ta` on a release tarball would), then checks of the RPMs it wrote:
# file lists, the Slurm series pin, License, %license LICENSE, scriptlets, and for the trainer that
# no LibTorch/CUDA library is required or bundled and the binary has no RUNPATH.
# Debian-host caveats, each handled here and not needed on a RHEL-family build host:
#   --nodeps        the RPM database on Debian knows none of the BuildRequires (the Debian
#                   equivalents are installed by scripts/setup.sh);
#   systemd macros  %systemd_post/_preun/_postun come from RHEL's systemd-rpm-macros;
#                   where rpm does not define them they are defined here as no-ops.
#   rpm_build_test.sh SOURCE_DIR OUT_DIR [VENV]   (with VENV and LLMRDZV_TRAINER_PACKAGES=1: also
#                                                  llm-rdzv-trainer, ~25 min more of compiling cold)
set -euo pipefail
src=${1:?usage: rpm_build_test.sh SOURCE_DIR OUT_DIR [VENV]}
out=${2:?usage: rpm_build_test.sh SOURCE_DIR OUT_DIR [VENV]}
venv=${3:-}
if [ -n "$venv" ] && [ "${LLMRDZV_TRAINER_PACKAGES:-0}" != 1 ]; then
  echo "note: llm-rdzv only; LLMRDZV_TRAINER_PACKAGES=1 also builds and checks llm-rdzv-trainer"
  venv=
fi
command -v rpmbuild >/dev/null || { echo "skipped: no rpmbuild (apt install rpm)"; exit 77; }
git -C "$src" rev-parse HEAD >/dev/null 2>&1 || { echo "skipped: $src is not a git checkout"; exit 77; }
source "$(dirname "$0")/expect.sh"

spec="$src/packaging/rpm/llm-rdzv.spec"
version=$(rpmspec -q --srpm --qf '%{VERSION}\n' "$spec")
mkdir -p "$out"
top=$(cd "$out" && pwd)/rpmbuild
rm -rf "$top"
mkdir -p "$top/SOURCES"
git -C "$src" archive --format=tar.gz --prefix="llm-rdzv-$version/" -o "$top/SOURCES/llm-rdzv-$version.tar.gz" HEAD

args=(-bb --nodeps --define "_topdir $top" --define "_smp_mflags -j${LLMRDZV_BUILD_JOBS:-$(nproc)}")
for m in systemd_post systemd_preun systemd_postun; do
  [ "$(rpm --eval "%{?$m:defined}")" = defined ] || args+=(--define "$m() :")
done
if [ -n "$venv" ]; then
  args+=(--define "llmrdzv_venv $(cd "$venv" && pwd -P)")
else
  args+=(--without trainer)
fi
# The project's CMake compiles through ccache when it is installed; paths relative to the unpacked
# tree let rebuilds (and other OUT_DIRs) hit.
export CCACHE_BASEDIR="$top/BUILD/llm-rdzv-$version" CCACHE_NOHASHDIR=true
log="$top/rpmbuild.log"
echo "rpmbuild ${args[*]} (log: $log)"
rpmbuild "${args[@]}" "$spec" >"$log" 2>&1 || { tail -n 40 "$log"; echo "FAIL: rpmbuild"; exit 1; }
rpms=$(ls "$top"/RPMS/*/*.rpm)
for r in $rpms; do
  printf 'size: %s %s KiB\n' "$(basename "$r")" "$(( $(stat -c %s "$r") / 1024 ))"
done

main=$(ls "$top"/RPMS/*/llm-rdzv-"$version"-*.rpm)
files=$(rpm -qpl "$main")
for f in /usr/sbin/rdzvd /usr/bin/rdzvctl /usr/sbin/llm-rdzv-secret /etc/llm-rdzv/rdzvd.yaml \
         /etc/slurm/plugstack.conf.d/llm-rdzv.conf "$(rpm --eval '%{_libdir}')/slurm/llm_rdzv.so" \
         "/usr/share/licenses/llm-rdzv-$version/LICENSE" /usr/share/doc/llm-rdzv/admin-guide.md; do
  check "$(basename "$main") lacks $f" grep -qxF "$f" <<<"$files"
done
check "$(basename "$main") lacks a man page" grep -q '/man8/rdzvd\.8' <<<"$files"
requires=$(rpm -qp --requires "$main")
check "no Slurm series pin in Requires" grep -q '^slurm(x86-64) >= [0-9][0-9]\.[0-9][0-9]$' <<<"$requires"
check "License is not Apache-2.0" test "$(rpm -qp --qf '%{LICENSE}' "$main")" = Apache-2.0
scripts=$(rpm -qp --scripts "$main")
check "a scriptlet holds an unexpanded macro" bash -c '! grep -q "%" <<<"$1"' _ "$scripts"

if [ -n "$venv" ]; then
  trainer_rpm=$(ls "$top"/RPMS/*/llm-rdzv-trainer-"$version"-*.rpm)
  files=$(rpm -qpl "$trainer_rpm")
  for f in /usr/bin/trainer /usr/libexec/llm-rdzv/trainer /etc/llm-rdzv/trainer.conf \
           "/usr/share/licenses/llm-rdzv-trainer-$version/LICENSE" /usr/share/llm-rdzv/trainer/default.yaml; do
    check "$(basename "$trainer_rpm") lacks $f" grep -qxF "$f" <<<"$files"
  done
  check "$(basename "$trainer_rpm") bundles a shared library" bash -c '! grep -q "\.so" <<<"$1"' _ "$files"
  requires=$(rpm -qp --requires "$trainer_rpm")
  check "the trainer RPM requires LibTorch/CUDA libraries: $(grep -E 'torch|c10|cuda|nccl' <<<"$requires" | tr '\n' ' ')" \
    bash -c '! grep -qE "torch|c10|cuda|nccl" <<<"$1"' _ "$requires"
  check "the trainer RPM does not require libgrpc++" grep -q '^libgrpc++' <<<"$requires"
  x=$(mktemp -d)
  rpm2archive - <"$trainer_rpm" | tar -xzf - -C "$x" ./usr/libexec/llm-rdzv/trainer
  check "the trainer binary in the RPM has a RUNPATH/RPATH" \
    bash -c '! readelf -d "$1" | grep -qE "\((RUNPATH|RPATH)\)"' _ "$x/usr/libexec/llm-rdzv/trainer"
  rm -rf "$x"
fi
finish
