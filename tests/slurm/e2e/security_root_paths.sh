#!/usr/bin/env bash
# Root never opens, follows or blocks on a path another user planted. Before the victim's step,
# a second user fills the places root used to touch with traps: FIFOs and symlinks (to a file
# of the victim's and to a root-owned file) named like the old per-step port directories under
# /tmp, and, in the shared (1777) log_dir, every log name the victim's next step could have had
# under the old namings ((job, step), then (job, step, slurmstepd pid)). The step starts and ends well within the
# start deadline, the victim's log is a new regular file of its own, and every trap and target
# is unchanged.
source "$(dirname "$0")/lib.sh"
require_file "$test_client"
attacker=${LLMRDZV_ATTACKER_USER:?the cluster has no attacker user: rerun scripts/slurm/cluster.sh up}
as_attacker() { setpriv --reuid="$attacker" --regid="$attacker" --init-groups -- "$@"; }
logs="$cluster_dir/rdzvd-logs"

# The victim's own file (what a log symlink into the victim's home would append to) and a
# root-owned one (what root's unlink of a port file through a planted symlink would delete).
echo "victim's bashrc" > bashrc && chown "$LLMRDZV_TEST_USER" bashrc
root_file=$(mktemp "$cluster_dir/work/root-owned.XXXXXX")
echo "root's file" > "$root_file"
before=$(sha256sum bashrc "$root_file")

last_job=$(as_user srun -N1 -n1 sh -c 'echo $SLURM_JOB_ID' 2>&1 | tail -n1)
[[ $last_job =~ ^[0-9]+$ ]] || fail "no job id from a plain step: $last_job"
next_job=$((last_job + 1))
traps=()
cleanup() { rm -rf "${traps[@]}" 2>/dev/null || true; rm -f "$root_file"; }
trap cleanup EXIT
for i in 1 2 3 4 5 6; do
  fifo=/tmp/llm-rdzv-trap$i
  link=/tmp/llm-rdzv-link$i
  as_attacker mkfifo "$fifo"
  as_attacker ln -s "$([ $((i % 2)) -eq 0 ] && echo "$root_file" || echo "$work/bashrc")" "$link"
  traps+=("$fifo" "$link")
done
# The exact name an earlier release gave the next step's log (the attack that made a victim's
# rdzvd append to the victim's ~/.bashrc), then every name of the later (job, step, pid) scheme.
as_attacker ln -s "$work/bashrc" "$logs/rdzvd-$next_job.0.log"
traps+=("$logs/rdzvd-$next_job.0.log")
last_pid=$(cat /proc/sys/kernel/ns_last_pid)
for pid in $(seq "$last_pid" $((last_pid + 400))); do
  name="$logs/rdzvd-$next_job.0-$pid.log"
  if [ $((pid % 2)) -eq 0 ]; then as_attacker ln -s "$work/bashrc" "$name"; else as_attacker mkfifo "$name"; fi
  traps+=("$name")
done
note "planted ${#traps[@]} traps (FIFOs and symlinks under /tmp and in $logs)"

start=$SECONDS
out=$(as_user srun -N2 -n2 --llm-rdzv sh -c 'echo "step=$SLURM_JOB_ID.$SLURM_STEP_ID"; exec "$0"' "$test_client" 2>&1) ||
  { echo "$out" >&2; fail "the victim's step failed among the traps"; }
took=$((SECONDS - start))
[ $took -lt 10 ] || fail "the step took $took s among the traps (start deadline 30 s)"
[ "$(grep -c '^barrier rank=[01] ok$' <<<"$out")" -eq 2 ] || { echo "$out" >&2; fail "barrier"; }
step=$(grep -m1 -Eo '^step=[0-9.]+' <<<"$out" | cut -d= -f2)
[ "${step%.*}" = "$next_job" ] || note "the victim's step was job ${step%.*}, not $next_job (another job ran between)"

[ "$(sha256sum bashrc "$root_file")" = "$before" ] || fail "a planted path was followed: a target changed"
for t in "${traps[@]}"; do
  [ -L "$t" ] || [ -p "$t" ] || fail "trap $t was removed or replaced"
done
real_logs=()
for f in "$logs"/rdzvd-"$step"-*.log; do [ -f "$f" ] && [ ! -L "$f" ] && real_logs+=("$f"); done
[ ${#real_logs[@]} -eq 1 ] || fail "not exactly one regular log for step $step: ${real_logs[*]}"
[ "$(stat -c %U "${real_logs[0]}")" = "$LLMRDZV_TEST_USER" ] || fail "the step's log is not the victim's"
expect_no_rdzvd 5
trap - EXIT
cleanup
finish
