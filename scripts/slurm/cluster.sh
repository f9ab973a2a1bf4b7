#!/usr/bin/env bash
# A real Slurm cluster on this one machine, for the end-to-end tests and for humans:
# munge (private key and socket), slurmctld, and N slurmd "nodes", each in its own network
# namespace (veth into a bridge, private test subnet) and UTS namespace (own hostname), with the
# freshly built llm_rdzv.so in plugstack.conf. Idempotent; `down` removes every trace
# (daemons, namespaces, links, /etc/hosts lines, the state directory, the test user).
#
#   cluster.sh up     [--dir DIR] [--build-dir BUILD] [--nodes N]
#   cluster.sh down   [--dir DIR]
#   cluster.sh status [--dir DIR]
#   then: source DIR/env   (exports SLURM_CONF; jobs: setpriv ... as $LLMRDZV_TEST_USER)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
dir=/run/llm-rdzv-slurm
build="$root/build"
nodes=3
subnet=172.30.77             # /24 used only inside this machine: .1 = controller, .11+ = nodes
bridge=lrdzv-br0
marker="# llm-rdzv-slurm"
test_user=llmrdzv-test
# A second unprivileged user on the same nodes: the attacker of the security tests.
attacker_user=llmrdzv-attacker
ctld_port=16817
slurmd_port=16818

log() { printf 'cluster: %s\n' "$*" >&2; }
die() { printf 'cluster: error: %s\n' "$*" >&2; exit 1; }

usage() { sed -n '8,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

[ $# -ge 1 ] || usage
action=$1; shift
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=${2:?}; shift 2 ;;
    --build-dir) build=${2:?}; shift 2 ;;
    --nodes) nodes=${2:?}; shift 2 ;;
    *) usage ;;
  esac
done
[[ "$nodes" =~ ^[1-9]$ ]] || die "--nodes must be 1..9"
[ "$action" != up ] || build=$(cd "$build" 2>/dev/null && pwd) || die "no build directory $build"
[ "$(id -u)" -eq 0 ] || die "run as root (namespaces, daemons, /etc/hosts)"

node_name() { echo "lr-node$1"; }
netns() { echo "lrdzv-n$1"; }
node_ip() { echo "$subnet.$((10 + $1))"; }
conf="$dir/slurm.conf"
export SLURM_CONF="$conf"

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# SIGTERM to every daemon named by the pid files at once (each takes ~2 s to exit), then up to
# 5 s for all of them, then SIGKILL.
stop_pidfiles() {
  local file pids=()
  for file in "$@"; do
    [ -f "$file" ] || continue
    kill -0 "$(cat "$file")" 2>/dev/null && pids+=("$(cat "$file")")
    rm -f "$file"
  done
  [ ${#pids[@]} -gt 0 ] || return 0
  kill "${pids[@]}" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "${pids[@]}" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "${pids[@]}" 2>/dev/null || true
}

write_config() {
  local plugin="$build/lib/llm_rdzv.so" rdzvd="$build/bin/rdzvd" i
  [ -f "$plugin" ] || die "no plugin at $plugin: build the llm_rdzv target (or pass --build-dir)"
  [ -x "$rdzvd" ] || log "warning: no rdzvd at $rdzvd yet: steps with --llm-rdzv will fail to start it"
  {
    echo "ClusterName=llmrdzv"
    echo "SlurmctldHost=lr-ctl($subnet.1)"
    echo "SlurmctldPort=$ctld_port"
    echo "SlurmdPort=$slurmd_port"
    echo "AuthType=auth/munge"
    echo "AuthInfo=socket=$dir/munge/munge.sock"
    echo "CredType=cred/munge"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "StateSaveLocation=$dir/ctld"
    echo "SlurmdSpoolDir=$dir/spool/%n"
    echo "SlurmctldPidFile=$dir/slurmctld.pid"
    echo "SlurmdPidFile=$dir/slurmd-%n.pid"
    echo "SlurmctldLogFile=$dir/log/slurmctld.log"
    echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_CPU"
    echo "SlurmdParameters=config_overrides"
    echo "MpiDefault=none"
    echo "ReturnToService=2"
    echo "JobCompType=jobcomp/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "PlugStackConfig=$dir/plugstack.conf"
    echo "KillWait=2"
    echo "MinJobAge=60"
    echo "MessageTimeout=20"
    echo "LaunchParameters=use_interactive_step"
    for i in $(seq "$nodes"); do
      echo "NodeName=$(node_name "$i") NodeAddr=$(node_ip "$i") CPUs=8 RealMemory=2000 State=UNKNOWN"
    done
    echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
  } > "$conf.tmp"
  mv "$conf.tmp" "$conf"
  # The plugin as a site would configure it, with short heartbeats so failure tests are quick.
  cat > "$dir/plugstack.conf.tmp" <<CONF
required $plugin rdzvd=$rdzvd port_range=20000-20999 log_dir=$dir/rdzvd-logs heartbeat_interval=200 heartbeat_timeout=2000 start_timeout=30000
CONF
  mv "$dir/plugstack.conf.tmp" "$dir/plugstack.conf"
  cat > "$dir/env" <<ENV
export SLURM_CONF=$conf
export LLMRDZV_TEST_USER=$test_user
export LLMRDZV_ATTACKER_USER=$attacker_user
export LLMRDZV_CLUSTER_DIR=$dir
ENV
}

start_munge() {
  mkdir -p "$dir/munge"
  chmod 700 "$dir/munge"
  [ -f "$dir/munge/munge.key" ] || { dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none; chmod 400 "$dir/munge/munge.key"; }
  pid_alive "$dir/munge/munged.pid" && return 0
  munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.sock" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed"
  # Unprivileged job users must reach the socket, not the key.
  chmod 755 "$dir/munge"
}

# Rewrites /etc/hosts in place (not sed -i's rename), so a bind-mounted /etc/hosts works too.
remove_hosts_lines() {
  local kept
  kept=$(grep -v -- "$marker\$" /etc/hosts || true)
  printf '%s\n' "$kept" > /etc/hosts
}

setup_network() {
  local i ns
  ip link show "$bridge" >/dev/null 2>&1 || ip link add "$bridge" type bridge
  ip addr show dev "$bridge" | grep -q "$subnet.1/24" || ip addr add "$subnet.1/24" dev "$bridge"
  ip link set "$bridge" up
  for i in $(seq "$nodes"); do
    ns=$(netns "$i")
    [ -e "/run/netns/$ns" ] || ip netns add "$ns"
    if ! ip link show "lrdzv-v$i" >/dev/null 2>&1; then
      ip link add "lrdzv-v$i" type veth peer name eth0 netns "$ns"
      ip link set "lrdzv-v$i" master "$bridge" up
    fi
    nsenter --net="/run/netns/$ns" ip link set lo up
    nsenter --net="/run/netns/$ns" ip addr show dev eth0 | grep -q "$(node_ip "$i")/24" ||
      nsenter --net="/run/netns/$ns" ip addr add "$(node_ip "$i")/24" dev eth0
    nsenter --net="/run/netns/$ns" ip link set eth0 up
  done
  remove_hosts_lines
  {
    echo "$subnet.1 lr-ctl $marker"
    for i in $(seq "$nodes"); do echo "$(node_ip "$i") $(node_name "$i") $marker"; done
  } >> /etc/hosts
}

ensure_test_user() {
  local user
  for user in "$test_user" "$attacker_user"; do
    id -u "$user" >/dev/null 2>&1 ||
      useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$user"
    reach_tree "$user" "$root"
    reach_tree "$user" "$build"
  done
  mkdir -p "$dir/rdzvd-logs" "$dir/work"
  chmod 1777 "$dir/rdzvd-logs" "$dir/work"
}

# Jobs run as the unprivileged test user and use the checkout (build tree, etc/, scripts): a
# checkout under a private directory (/root is 0700) would be out of its reach. Every directory
# on the way that the test user cannot search gets a search-only ACL entry for it, recorded in
# $dir/acl-grants and removed by `down`.
reach_tree() {
  local user=$1 path=$2 d="" part
  local -a parts
  IFS=/ read -ra parts <<<"${path#/}"
  for part in "" "${parts[@]}"; do  # from / down, so each test sees its ancestors searchable
    d="${d%/}/$part"
    if ! setpriv --reuid="$user" --regid="$user" --clear-groups test -x "$d" 2>/dev/null; then
      command -v setfacl >/dev/null || die "$user cannot reach $path (no search permission on $d) and setfacl is missing (apt install acl)"
      setfacl -m "u:$user:x" "$d" || die "cannot give $user search permission on $d (file system without ACLs?)"
      echo "$user $d" >> "$dir/acl-grants"
      log "granted $user search (x) on $d so jobs reach $path"
    fi
  done
}

revoke_grants() {
  local user d
  [ -f "$dir/acl-grants" ] || return 0
  while read -r user d; do setfacl -x "u:$user" "$d" 2>/dev/null || true; done < "$dir/acl-grants"
  rm -f "$dir/acl-grants"
}

start_daemons() {
  local i name
  mkdir -p "$dir/ctld" "$dir/log" "$dir/spool"
  if ! pid_alive "$dir/slurmctld.pid"; then
    unshare --uts sh -c "hostname lr-ctl && exec slurmctld -f '$conf'"
  fi
  for i in $(seq "$nodes"); do
    name=$(node_name "$i")
    mkdir -p "$dir/spool/$name"
    pid_alive "$dir/slurmd-$name.pid" && continue
    nsenter --net="/run/netns/$(netns "$i")" unshare --uts \
      sh -c "hostname '$name' && exec slurmd -N '$name' -f '$conf'"
  done
}

wait_idle() {
  local idle
  for _ in $(seq 150); do
    idle=$(sinfo -h -N -o '%N %T' 2>/dev/null | grep -c -E ' (idle|mixed|allocated)$' || true)
    [ "$idle" -eq "$nodes" ] && return 0
    sleep 0.2
  done
  sinfo -N >&2 || true
  die "nodes did not become idle within 30 s (logs: $dir/log)"
}

healthy() {
  [ -f "$conf" ] && pid_alive "$dir/munge/munged.pid" && pid_alive "$dir/slurmctld.pid" || return 1
  local i
  for i in $(seq "$nodes"); do pid_alive "$dir/slurmd-$(node_name "$i").pid" || return 1; done
}

cluster_up() {
  mkdir -p "$dir"
  chmod 755 "$dir"
  if healthy; then
    write_config
    log "already up ($nodes nodes); plugstack.conf refreshed"
    return 0
  fi
  [ -f "$conf" ] && { log "partly up: restarting"; cluster_down; mkdir -p "$dir"; chmod 755 "$dir"; }
  write_config
  start_munge
  setup_network
  ensure_test_user
  start_daemons
  wait_idle
  log "up: $nodes nodes; source $dir/env"
}

cluster_down() {
  local i ns pids
  [ -d "$dir" ] && stop_pidfiles "$dir"/slurmd-*.pid "$dir/slurmctld.pid" "$dir/munge/munged.pid"
  # Whatever still runs in a node (slurmstepd, tasks, rdzvd) goes with the namespace.
  for i in $(seq 9); do
    ns=$(netns "$i")
    [ -e "/run/netns/$ns" ] || continue
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null || true
    ip link del "lrdzv-v$i" 2>/dev/null || true
    ip netns del "$ns"
  done
  ip link del "$bridge" 2>/dev/null || true
  remove_hosts_lines
  revoke_grants
  id -u "$test_user" >/dev/null 2>&1 && userdel "$test_user" 2>/dev/null || true
  rm -rf "$dir"
  log "down"
}

cluster_status() {
  if ! [ -f "$conf" ]; then echo "down"; return 1; fi
  local i state=up
  pid_alive "$dir/munge/munged.pid" && echo "munged: running" || { echo "munged: stopped"; state=degraded; }
  pid_alive "$dir/slurmctld.pid" && echo "slurmctld: running" || { echo "slurmctld: stopped"; state=degraded; }
  for i in $(seq "$nodes"); do
    pid_alive "$dir/slurmd-$(node_name "$i").pid" && echo "slurmd $(node_name "$i"): running" ||
      { echo "slurmd $(node_name "$i"): stopped"; state=degraded; }
  done
  sinfo -N 2>/dev/null || true
  echo "$state"
  [ "$state" = up ]
}

case "$action" in
  up) cluster_up ;;
  down) cluster_down ;;
  status) cluster_status ;;
  *) usage ;;
esac
