#!/usr/bin/env bash
# The installed rdzvd.service under a real systemd: this machine's own root, with the llm-rdzv
# package installed, booted as an ephemeral container (systemd-nspawn, a throw-away overlay, no
# network but loopback), because the test machine's PID 1 is not systemd. Checks what a site admin
# relies on: a start without the site secret fails at once and names it; with it, rdzvd runs as
# llm-rdzv with no capabilities, no new privileges and a seccomp filter, cannot read the secret
# file itself, and answers on port 29400 as soon as `systemctl start` returns (Type=notify); reload
# is SIGHUP in place; it serves Prometheus metrics on 127.0.0.1:9464; a killed daemon is restarted,
# and so is a stopped (SIGSTOP) one, by the watchdog; stop is clean. Installing the package's .deb
# over it (an upgrade, from a unit file made to look older) leaves the running daemon alone but has
# systemd load the new unit; removing the package stops the daemon. Called by deb_package_test.sh while that .deb is installed. Needs root.
#   systemd_unit_test.sh DEB
set -euo pipefail
source "$(dirname "$0")/expect.sh"
deb=${1:?usage: systemd_unit_test.sh DEB}
command -v systemd-nspawn >/dev/null || { echo "FAIL: no systemd-nspawn (scripts/setup.sh installs systemd-container)"; exit 1; }
[ -f /lib/systemd/system/rdzvd.service ] || { echo "FAIL: rdzvd.service is not installed"; exit 1; }

view=$(mktemp -d)  # nspawn will not boot "/" itself, but a bind mount of it is fine
log=$(mktemp)
nspawn_pid=
cleanup() {
  [ -n "$nspawn_pid" ] && kill "$nspawn_pid" 2>/dev/null && wait "$nspawn_pid" 2>/dev/null || true
  mountpoint -q "$view" && umount "$view"
  rmdir "$view"
  rm -f "$log"
}
trap cleanup EXIT
mount --bind / "$view"
# --register=no --keep-unit: no machined or D-Bus on the host side. basic.target: no other daemon.
systemd-nspawn --quiet --register=no --keep-unit --private-network --volatile=overlay -D "$view" \
  --bind-ro="$(realpath "$deb")":/opt/llm-rdzv-test.deb \
  --machine="llm-rdzv-unit-$$" --boot systemd.unit=basic.target >"$log" 2>&1 &
nspawn_pid=$!

init=
for _ in $(seq 100); do
  init=$(pgrep -P "$nspawn_pid" -x systemd || true)
  [ -n "$init" ] && break
  sleep 0.1
done
[ -n "$init" ] || { cat "$log"; echo "FAIL: the container's systemd did not start"; exit 1; }
in_container() { nsenter --target "$init" --mount --uts --ipc --net --pid -- "$@"; }
state=
for _ in $(seq 300); do
  state=$(in_container systemctl is-system-running 2>/dev/null || true)
  case "$state" in running|degraded) break ;; esac
  sleep 0.1
done
case "$state" in running|degraded) echo "ok: container booted ($state)" ;;
  *) cat "$log"; echo "FAIL: the container did not boot (state '$state')"; exit 1 ;; esac
property() { in_container systemctl show -P "$1" rdzvd.service; }
# Waits up to $2 tenths of a second for rdzvd.service to be active again with a main pid other
# than $1; prints that pid (empty when it did not happen).
restarted_after() {
  local old=$1 tries=$2 new=
  for _ in $(seq "$tries"); do
    new=$(property MainPID)
    if [ "${new:-0}" -gt 0 ] && [ "$new" != "$old" ] && [ "$(property ActiveState)" = active ]; then
      echo "$new"
      return
    fi
    sleep 0.1
  done
}

# No secret yet: the start fails once (AssertPathExists), it does not loop on restarts.
in_container rm -f /etc/llm-rdzv/site.secret
expect 1 "" -- in_container systemctl start rdzvd.service
check "AssertResult is not 'no' after a start without the secret" [ "$(property AssertResult)" = no ]
check "rdzvd.service is not inactive after the failed assertion" [ "$(property ActiveState)" = inactive ]
check "rdzvd ran without the secret" [ "$(property ExecMainPID)" = 0 ]
expect 0 "Assertion failed for rdzvd.service" -- in_container journalctl -u rdzvd --no-pager

expect 0 "wrote /etc/llm-rdzv/site.secret" -- in_container llm-rdzv-secret
expect 0 "" -- in_container systemctl start rdzvd.service
# Type=notify: `systemctl start` returns once rdzvd said READY=1, after it listens; no retry loop.
expect 0 "mode=site" -- in_container rdzvctl --endpoint 127.0.0.1:29400 --timeout 1 ping
check "rdzvd.service is not Type=notify" [ "$(property Type)" = notify ]
check "rdzvd's STATUS= is not its listening line" grep -q "^listening on .*:29400 mode=site" <<<"$(property StatusText)"
# The shipped rdzvd.yaml serves Prometheus metrics on loopback (a plain HTTP GET, as a scraper sends).
metrics_page() {
  in_container bash -c 'exec 3<>/dev/tcp/127.0.0.1/9464 && printf "GET /metrics HTTP/1.0\r\n\r\n" >&3 && cat <&3'
}
expect 0 'rdzvd_build_info{version="' -- metrics_page
expect 0 'mode="site"' -- metrics_page
pid=$(property MainPID)
check "rdzvd.service has no main process after start" [ "${pid:-0}" -gt 0 ]
expect 0 "llm-rdzv" -- in_container ps -o user= -p "$pid"
status=$(in_container cat "/proc/$pid/status")
check "rdzvd may gain privileges" grep -Eq '^NoNewPrivs:[[:space:]]+1$' <<<"$status"
check "rdzvd has capabilities" grep -Eq '^CapEff:[[:space:]]+0+$' <<<"$status"
check "rdzvd's bounding set is not empty" grep -Eq '^CapBnd:[[:space:]]+0+$' <<<"$status"
check "rdzvd runs without a seccomp filter" grep -Eq '^Seccomp:[[:space:]]+2$' <<<"$status"
memory_max=$(property MemoryMax)
check "rdzvd.service's MemoryMax is '$memory_max', not 8G" [ "$memory_max" = "$((8 << 30))" ]
expect 1 "Permission denied" -- in_container setpriv --reuid=llm-rdzv --regid=llm-rdzv --clear-groups \
  cat /etc/llm-rdzv/site.secret
for _ in $(seq 50); do in_container rdzvctl --endpoint 127.0.0.1:29400 ping >/dev/null 2>&1 && break; sleep 0.1; done
expect 0 "mode=site" -- in_container rdzvctl --endpoint 127.0.0.1:29400 ping

expect 0 "" -- in_container systemctl reload rdzvd.service
check "reload replaced the daemon" [ "$(property MainPID)" = "$pid" ]
for _ in $(seq 50); do in_container journalctl -u rdzvd --no-pager | grep -q "SIGHUP: reloaded" && break; sleep 0.1; done
expect 0 "SIGHUP: reloaded /etc/llm-rdzv/rdzvd.yaml" -- in_container journalctl -u rdzvd --no-pager

in_container kill -9 "$pid"
check "a killed rdzvd was not restarted within 10 s" [ -n "$(restarted_after "$pid" 100)" ]
check "NRestarts is not 1 after one kill" [ "$(property NRestarts)" = 1 ]
for _ in $(seq 50); do in_container rdzvctl --endpoint 127.0.0.1:29400 ping >/dev/null 2>&1 && break; sleep 0.1; done
expect 0 "mode=site" -- in_container rdzvctl --endpoint 127.0.0.1:29400 ping

# The watchdog (2 s here instead of the unit's 30 s): a running rdzvd keeps petting it; a stopped
# (SIGSTOP) one is killed and restarted.
in_container mkdir -p /run/systemd/system/rdzvd.service.d
in_container sh -c 'printf "[Service]\nWatchdogSec=2s\nTimeoutAbortSec=2s\n" > /run/systemd/system/rdzvd.service.d/watchdog.conf'
in_container systemctl daemon-reload
expect 0 "" -- in_container systemctl restart rdzvd.service
pid=$(property MainPID)
restarts=$(property NRestarts)
sleep 5
check "a running rdzvd was restarted by a 2 s watchdog (it does not pet it)" [ "$(property MainPID)" = "$pid" ]
in_container kill -STOP "$pid"
check "a SIGSTOPped rdzvd was not restarted by the watchdog within 20 s" [ -n "$(restarted_after "$pid" 200)" ]
check "NRestarts did not grow after the watchdog fired" [ "$(property NRestarts)" -gt "$restarts" ]
expect 0 "Watchdog timeout" -- in_container journalctl -u rdzvd --no-pager
in_container rm -r /run/systemd/system/rdzvd.service.d
in_container systemctl daemon-reload
expect 0 "mode=site" -- in_container rdzvctl --endpoint 127.0.0.1:29400 --timeout 2 ping

expect 0 "" -- in_container systemctl stop rdzvd.service
check "rdzvd.service is not inactive after stop" [ "$(property ActiveState)" = inactive ]
journal=$(in_container journalctl -u rdzvd --no-pager -o cat)
check "the journal lacks rdzvd's 'stopped' line" grep -q "info stopped$" <<<"$journal"
check "rdzvd's stdout (the bare port) reached the journal" bash -c '! grep -qx 29400 <<<"$1"' _ "$journal"

# All inside the container's throw-away overlay: the host keeps its installed package. A Docker
# image's policy-rc.d (exit 101) would veto every service action of maintainer scripts, so that no
# check below could fail: gone here, as on a real host.
in_container rm -f /usr/sbin/policy-rc.d
unit=/lib/systemd/system/rdzvd.service
description=$(property Description)
in_container sed -i 's/^Description=.*/Description=an older rdzvd.service/' "$unit"
in_container systemctl daemon-reload
expect 0 "" -- in_container systemctl start rdzvd.service
pid=$(property MainPID)
check "the older unit did not load" [ "$(property Description)" = "an older rdzvd.service" ]
expect 0 "Setting up llm-rdzv" -- in_container dpkg -i /opt/llm-rdzv-test.deb
check "an upgrade restarted or stopped rdzvd (site-mode rendezvous live in its memory)" \
  [ "$(property MainPID)" = "$pid" -a "$(property ActiveState)" = active ]
check "after an upgrade systemd still runs the old unit file (NeedDaemonReload)" \
  [ "$(property NeedDaemonReload)" = no -a "$(property Description)" = "$description" ]
expect 0 "Removing llm-rdzv" -- in_container dpkg --remove llm-rdzv
check "removing the package left rdzvd running" [ "$(property ActiveState)" != active ]
expect 1 "" -- in_container pgrep -x rdzvd
finish
