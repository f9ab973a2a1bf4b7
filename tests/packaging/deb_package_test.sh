#!/usr/bin/env bash
# The llm-rdzv Debian package end to end: build it with dpkg-buildpackage (profile without the
# trainer) and lintian via packaging/build-deb.sh, install it on this machine, check the installed
# files, the system user, the systemd unit (systemd-analyze verify + security score, then started,
# reloaded, killed and stopped under a real systemd, left running by an upgrade and stopped by
# removal: systemd_unit_test.sh), and run the
# installed rdzvd in site mode with a secret from the installed llm-rdzv-secret and rdzvctl against
# it; on the test Slurm cluster, run `srun --llm-rdzv` with the installed plugstack snippet as the
# cluster's plugstack.conf (installed plugin, installed /usr/sbin/rdzvd), then the whole Slurm
# end-to-end suite (tests/slurm/e2e) with the cluster's plugstack line pointing at the installed
# plugin and rdzvd; then purge the package and check nothing is left. Needs root.
#   deb_package_test.sh SOURCE_DIR OUT_DIR [BUILD_DIR (for bin/rdzv-test-client)]
set -euo pipefail
src=${1:?usage: deb_package_test.sh SOURCE_DIR OUT_DIR [BUILD_DIR]}
out=${2:?usage: deb_package_test.sh SOURCE_DIR OUT_DIR [BUILD_DIR]}
build=${3:-}
cluster=${LLMRDZV_CLUSTER_DIR:-/run/llm-rdzv-slurm}
[ "$(id -u)" -eq 0 ] || { echo "skipped: needs root (dpkg -i)"; exit 77; }

fail() { printf 'FAIL: %s\n' "$*"; exit 1; }
ok() { printf 'ok: %s\n' "$*"; }

"$src/packaging/build-deb.sh" --out "$out" --no-trainer
deb=$(ls "$out"/llm-rdzv_*.deb)

work=$(mktemp -d)
rdzvd_pid=
cleanup() {
  [ -n "$rdzvd_pid" ] && kill "$rdzvd_pid" 2>/dev/null || true
  [ -f "$work/plugstack.conf.saved" ] && cp "$work/plugstack.conf.saved" "$cluster/plugstack.conf"
  dpkg --purge llm-rdzv >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

dpkg -i "$deb" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg -i $deb"; }
ok "installed $(basename "$deb")"

plugin_dir=$(dirname "$(dpkg -L llm-rdzv | grep '/llm_rdzv\.so$')")
for f in /usr/sbin/rdzvd /usr/bin/rdzvctl /usr/sbin/llm-rdzv-secret "$plugin_dir/llm_rdzv.so" \
         /etc/slurm/plugstack.conf.d/llm-rdzv.conf /lib/systemd/system/rdzvd.service \
         /usr/lib/sysusers.d/llm-rdzv.conf /usr/share/doc/llm-rdzv/admin-guide.md.gz /etc/llm-rdzv/rdzvd.yaml \
         /usr/share/doc/llm-rdzv/copyright; do
  [ -e "$f" ] || fail "$f is not installed"
done
ok "files in place (plugin in $plugin_dir)"
[ "$plugin_dir" = "$(dirname "$(dpkg -L slurm-wlm-basic-plugins | grep -m1 '/accounting_storage_none\.so$')")" ] \
  || fail "the plugin is not in Slurm's plugin directory"
grep -q "^optional $plugin_dir/llm_rdzv.so" /etc/slurm/plugstack.conf.d/llm-rdzv.conf \
  || fail "plugstack snippet does not load $plugin_dir/llm_rdzv.so as optional"
ok "plugstack snippet: optional, names the installed plugin"
nm -D --defined-only "$plugin_dir/llm_rdzv.so" | grep -qw slurm_spank_init || fail "plugin exports no slurm_spank_init"
! ldd "$plugin_dir/llm_rdzv.so" | grep -q libslurm || fail "the plugin links libslurm"
for page in llm-rdzv.8 rdzvd.8 rdzvctl.1 llm-rdzv-secret.8; do
  man -w "${page%.*}" >/dev/null 2>&1 || fail "man page $page not found by man"
done
ok "man pages found by man"
dpkg-query -W -f='${Depends}\n' llm-rdzv | grep -q 'slurm-wlm-basic-plugins (>= 22.05)' || fail "no Slurm series pin in Depends"
[ "$(stat -c %a /usr/sbin/llm-rdzv-secret)" = 755 ] || fail "llm-rdzv-secret is not executable"

getent passwd llm-rdzv | grep -q ':/usr/sbin/nologin$' || fail "no system user llm-rdzv with nologin"
[ "$(id -u llm-rdzv)" -lt 1000 ] || fail "llm-rdzv is not a system user"
! systemctl is-enabled rdzvd.service >/dev/null 2>&1 || fail "rdzvd.service got enabled by the package"
ok "system user llm-rdzv, unit not enabled"

verify=$(systemd-analyze verify /lib/systemd/system/rdzvd.service 2>&1) || fail "systemd-analyze verify: $verify"
[ -z "$verify" ] || fail "systemd-analyze verify warns: $verify"
score=$(systemd-analyze security --offline=true /lib/systemd/system/rdzvd.service 2>/dev/null \
          | sed -n 's/.*Overall exposure level for rdzvd.service: \([0-9.]*\).*/\1/p')
[ -n "$score" ] || fail "systemd-analyze security gave no score"
awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }' || fail "exposure score $score is above 2.0"
ok "systemd-analyze verify clean, security exposure $score"
"$src/tests/packaging/systemd_unit_test.sh" "$deb" >"$work/systemd.log" 2>&1 || { cat "$work/systemd.log"; fail "rdzvd.service under systemd"; }
ok "rdzvd.service under systemd (booted container): $(grep -c '^ok:' "$work/systemd.log") checks"

secret="$work/site.secret"
llm-rdzv-secret --file "$secret" >/dev/null
# As rdzvd.service starts it (installed config, site mode, the secret file), but on loopback and
# with /metrics on an ephemeral port rather than the shipped 9464, which the host may be using.
rdzvd --config /etc/llm-rdzv/rdzvd.yaml --mode site --site-secret-file "$secret" \
  --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --port-file "$work/port" --idle-timeout 60 >"$work/rdzvd.log" 2>&1 &
rdzvd_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { cat "$work/rdzvd.log"; fail "installed rdzvd did not report a port"; }
port=$(tr -d '\n' <"$work/port"); port=${port##*:}
rdzvctl --endpoint "127.0.0.1:$port" ping || fail "rdzvctl ping against the installed rdzvd"
ok "installed rdzvd (site mode) answers installed rdzvctl on port $port"
kill "$rdzvd_pid"; wait "$rdzvd_pid" 2>/dev/null || true; rdzvd_pid=

client="$build/bin/rdzv-test-client"
[ -f "$cluster/env" ] || fail "no test cluster at $cluster (this test needs the slurm_cluster fixture)"
[ -x "$client" ] || fail "no $client (build the tree first)"
# shellcheck disable=SC1091
source "$cluster/env"
cp "$cluster/plugstack.conf" "$work/plugstack.conf.saved"
cp /etc/slurm/plugstack.conf.d/llm-rdzv.conf "$cluster/plugstack.conf"
chmod 755 "$work"
e2e=$(cd / && setpriv --reuid="$LLMRDZV_TEST_USER" --regid="$LLMRDZV_TEST_USER" --init-groups -- \
        srun -N2 -n4 --llm-rdzv sh -c 'echo "endpoint=$RDZV_ENDPOINT"; exec "$0"' "$client" 2>&1) \
  || { echo "$e2e"; fail "srun --llm-rdzv with the installed plugin"; }
[ "$(grep -c '^barrier rank=[0-3] ok$' <<<"$e2e")" -eq 4 ] || { echo "$e2e"; fail "4 ranks through the installed plugin and rdzvd"; }
grep -Eq '^endpoint=lr-node1:29[5-9][0-9][0-9]$' <<<"$e2e" || { echo "$e2e"; fail "endpoint not in the snippet's port range"; }
ok "srun -N2 -n4 --llm-rdzv on the test cluster with the installed snippet, plugin and rdzvd"

# The end-to-end suite against the installed plugin and rdzvd: the cluster's own plugstack line
# (its port range and short heartbeats, which the tests expect) with the installed paths.
sed -e "s|^required [^ ]*/llm_rdzv\.so |required $plugin_dir/llm_rdzv.so |" \
    -e "s| rdzvd=[^ ]*| rdzvd=/usr/sbin/rdzvd|" "$work/plugstack.conf.saved" > "$cluster/plugstack.conf"
grep -q "^required $plugin_dir/llm_rdzv.so .*rdzvd=/usr/sbin/rdzvd" "$cluster/plugstack.conf" ||
  fail "could not point the cluster's plugstack line at the installed files: $(cat "$cluster/plugstack.conf")"
passed=0
for script in "$src"/tests/slurm/e2e/*.sh; do
  name=$(basename "$script" .sh)
  case "$name" in lib|trainer_lib) continue ;; esac
  rc=0
  LLMRDZV_BUILD_DIR="$build" LLMRDZV_PYTHON="$src/.venv/bin/python" LLMRDZV_E2E_RDZVD=/usr/sbin/rdzvd \
    bash "$script" >"$work/e2e-$name.log" 2>&1 || rc=$?
  case "$rc" in
    0) passed=$((passed + 1)) ;;
    77) echo "note: e2e $name skipped: $(tail -n1 "$work/e2e-$name.log")" ;;
    *) cat "$work/e2e-$name.log"; fail "e2e $name with the installed plugin and rdzvd (exit $rc)" ;;
  esac
done
cp "$work/plugstack.conf.saved" "$cluster/plugstack.conf"
rm "$work/plugstack.conf.saved"
[ "$passed" -ge 10 ] || fail "only $passed end-to-end scripts passed against the installed files"
ok "$passed Slurm end-to-end scripts pass with the installed plugin and rdzvd"

dpkg --purge llm-rdzv >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg --purge"; }
for f in /usr/sbin/rdzvd "$plugin_dir/llm_rdzv.so" /etc/slurm/plugstack.conf.d/llm-rdzv.conf /etc/llm-rdzv; do
  [ ! -e "$f" ] || fail "$f left after purge"
done
ok "purge removes everything"
