# Shared helpers of the Slurm end-to-end tests (sourced). The cluster comes from
# scripts/slurm/cluster.sh (the ctest fixture); jobs run as its unprivileged test user, so the
# tests also prove that tasks and rdzvd run as the job's user. Needs LLMRDZV_BUILD_DIR.
set -euo pipefail

: "${LLMRDZV_BUILD_DIR:?set LLMRDZV_BUILD_DIR to the build directory}"
cluster_dir=${LLMRDZV_CLUSTER_DIR:-/run/llm-rdzv-slurm}
[ -f "$cluster_dir/env" ] || { echo "no cluster at $cluster_dir: run scripts/slurm/cluster.sh up" >&2; exit 1; }
# shellcheck disable=SC1091
source "$cluster_dir/env"
e2e_dir=$(cd "$(dirname "$0")" && pwd)
test_client="$LLMRDZV_BUILD_DIR/bin/rdzv-test-client"
# The rdzvd a test starts itself (site mode, port collisions): the build's, or the installed one
# when the package test runs this suite against the installed files.
rdzvd_bin=${LLMRDZV_E2E_RDZVD:-$LLMRDZV_BUILD_DIR/bin/rdzvd}
test_name=$(basename "$0" .sh)
work=$(mktemp -d "$cluster_dir/work/$test_name.XXXXXX")
chmod 755 "$work"
chown "$LLMRDZV_TEST_USER" "$work"
cd "$work"
export HOME="$work"

fail() { echo "FAIL($test_name): $*" >&2; exit 1; }
note() { echo "# $*" >&2; }

# Runs a command as the test user (srun, sbatch, ... or anything).
as_user() { setpriv --reuid="$LLMRDZV_TEST_USER" --regid="$LLMRDZV_TEST_USER" --init-groups -- "$@"; }

require_file() { [ -x "$1" ] || fail "missing $1 (build it first)"; }

# Fails unless `text` contains `pattern` (grep -E).
expect_match() {
  local text=$1 pattern=$2 what=$3
  grep -Eq -- "$pattern" <<<"$text" || { printf '%s\n' "$text" >&2; fail "$what: no line matching /$pattern/"; }
}

# Processes named rdzvd running inside any of the cluster's node namespaces.
cluster_rdzvd_pids() {
  local ns pid
  for ns in /run/netns/lrdzv-n*; do
    for pid in $(ip netns pids "$(basename "$ns")" 2>/dev/null); do
      [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = rdzvd ] && echo "$pid"
    done
  done
  return 0
}

# Waits up to $1 seconds until no rdzvd runs in the cluster.
expect_no_rdzvd() {
  local deadline=$((SECONDS + $1))
  while [ -n "$(cluster_rdzvd_pids)" ]; do
    [ $SECONDS -lt $deadline ] || { ps -o pid,user,args -p "$(cluster_rdzvd_pids | tr '\n' ',')0" >&2; fail "rdzvd still running"; }
    sleep 0.1
  done
}

# The job id srun/sbatch printed ("Submitted batch job N") or a step's env line SLURM_JOB_ID=N.
job_of() { grep -Eo '[0-9]+' <<<"$1" | tail -n1; }

# Waits up to $2 seconds (default 60) for job $1 to leave the queue; cancels it and fails if not.
wait_for_job() {
  local job=$1 deadline=$((SECONDS + ${2:-60})) state
  while state=$(squeue -h -j "$job" -o %T 2>/dev/null || true); [ -n "$state" ]; do
    [ $SECONDS -lt $deadline ] || { scancel "$job"; fail "job $job still $state after ${2:-60} s"; }
    sleep 0.1
  done
}

# Starts, as the cluster's attacker user in lr-node1's network namespace, an rdzv-impostor of
# KIND on each PORT (raw: accepts connections, never answers; fake: answers OK to every call),
# recording what reaches it in loot/KIND.PORT (its log in squat.PORT.out), and waits until each
# listens. stop_squatters (also run on exit) ends them all.
squatters=()
start_squatters() {
  local kind=$1 port impostor="$LLMRDZV_BUILD_DIR/bin/rdzv-impostor"
  local attacker=${LLMRDZV_ATTACKER_USER:?the cluster has no attacker user: rerun scripts/slurm/cluster.sh up}
  shift
  require_file "$impostor"
  [ -d loot ] || { mkdir loot && chown "$attacker" loot && chmod 700 loot; }
  for port in "$@"; do
    nsenter --net=/run/netns/lrdzv-n1 setpriv --reuid="$attacker" --regid="$attacker" --init-groups -- \
      "$impostor" --kind "$kind" --listen "0.0.0.0:$port" --loot "loot/$kind.$port" > "squat.$port.out" 2>&1 &
    squatters+=($!)
  done
  trap stop_squatters EXIT
  for port in "$@"; do
    for _ in $(seq 200); do grep -q '^listening' "squat.$port.out" 2>/dev/null && break; sleep 0.05; done
    grep -q "^listening $port" "squat.$port.out" || { cat "squat.$port.out" >&2; fail "squatter on $port did not start"; }
  done
}
stop_squatters() {
  [ ${#squatters[@]} -eq 0 ] || kill "${squatters[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  squatters=()
}

finish() { rm -rf "$work"; echo "PASS($test_name)"; }
