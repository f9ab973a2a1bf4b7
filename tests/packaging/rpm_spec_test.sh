#!/usr/bin/env bash
# packaging/rpm/llm-rdzv.spec through rpmspec (RPM's own parser): it expands cleanly, carries the
# project's version, and builds llm-rdzv + llm-rdzv-trainer by default but only llm-rdzv with
# --without trainer. (A Debian host has no RHEL build dependencies, so rpmbuild itself runs on the
# RHEL side.)  rpm_spec_test.sh SPEC PROJECT_VERSION
set -euo pipefail
spec=${1:?usage: rpm_spec_test.sh SPEC VERSION}
version=${2:?usage: rpm_spec_test.sh SPEC VERSION}
command -v rpmspec >/dev/null || { echo "skipped: no rpmspec (apt install rpm)"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
defines=(--define 'slurm_series 22.05')

parsed=$(rpmspec -P "${defines[@]}" "$spec" 2>&1) || { echo "$parsed" >&2; fail "rpmspec -P failed"; }
! grep -qi -E '^(warning|error):' <<<"$parsed" || { grep -i -E '^(warning|error):' <<<"$parsed" >&2; fail "rpmspec -P warns"; }
echo "ok: rpmspec -P parses $spec"

spec_version=$(rpmspec -q --srpm --qf '%{VERSION}\n' "${defines[@]}" "$spec")
[ "$spec_version" = "$version" ] || fail "spec version $spec_version, project version $version"
echo "ok: version $version"

both=$(rpmspec -q --qf '%{NAME}\n' "${defines[@]}" "$spec" | sort | tr '\n' ' ')
[ "$both" = "llm-rdzv llm-rdzv-trainer " ] || fail "default build makes: $both"
plain=$(rpmspec -q --qf '%{NAME}\n' "${defines[@]}" --without trainer "$spec" | tr '\n' ' ')
[ "$plain" = "llm-rdzv " ] || fail "--without trainer makes: $plain"
echo "ok: packages [$both], --without trainer [$plain]"

requires=$(rpmspec -q --requires "${defines[@]}" "$spec" | tr '\n' ';')
[[ "$requires" == *"slurm(x86-64) >= 22.05;"* && "$requires" == *"slurm(x86-64) < 22.05.999;"* ]] || fail "no Slurm series pin: $requires"
echo "ok: Slurm pinned to 22.05"
