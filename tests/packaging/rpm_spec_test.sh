#!/usr/bin/env bash
# packaging/rpm/llm-rdzv.spec through rpmspec (RPM's own parser): it expands cleanly, carries the
# project's version, and builds llm-rdzv + llm-rdzv-trainer by default but only llm-rdzv with
# --without trainer; the Slurm series comes from the installed slurm/slurm_version.h when not
# defined; its License is the one of LICENSE and debian/copyright, and every package ships LICENSE.
# (rpmbuild -bb itself: packaging_rpm_build.)  rpm_spec_test.sh SPEC PROJECT_VERSION
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

if [ -r /usr/include/slurm/slurm_version.h ]; then
  series=$(rpmspec -q --requires "$spec" | sed -n 's/^slurm(x86-64) >= //p')
  v=$(awk '$2 == "SLURM_VERSION_NUMBER" { print $3 }' /usr/include/slurm/slurm_version.h)
  expected=$(printf '%d.%02d' $((v >> 16 & 255)) $((v >> 8 & 255)))
  [ "$series" = "$expected" ] || fail "Slurm series from slurm_version.h: got '$series', expected $expected"
  echo "ok: without a definition the series is $series (slurm_version.h)"
fi

src=$(cd "$(dirname "$spec")/../.." && pwd)
license=$(rpmspec -q --srpm --qf '%{LICENSE}\n' "${defines[@]}" "$spec")
deb_license=$(awk '/^Files: \*$/ { f = 1 } f && /^License:/ { print $2; exit }' "$src/packaging/debian/copyright")
[ "$license" = Apache-2.0 ] && [ "$deb_license" = Apache-2.0 ] || fail "License: rpm '$license', debian/copyright '$deb_license'"
grep -q 'Apache License' "$src/LICENSE" && grep -q 'Version 2.0, January 2004' "$src/LICENSE" || fail "LICENSE is not the Apache-2.0 text"
[ "$(rpmspec -P "${defines[@]}" "$spec" | grep -c '^%license LICENSE$')" = 2 ] || fail "not every package has %license LICENSE"
echo "ok: License Apache-2.0 in the spec, debian/copyright and LICENSE; both packages ship it"
