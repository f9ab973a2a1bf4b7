#!/usr/bin/env bash
# A task killed mid-run is reported to the others within the heartbeat timeout (the cluster's
# plugstack.conf sets heartbeat_timeout=2000 ms); so is a task that hangs (SIGSTOP), which only
# the heartbeat deadline can catch; a step cancelled while its rendezvous is held, or whose
# slurmstepd is killed, leaves no rdzvd behind.
source "$(dirname "$0")/lib.sh"
require_file "$test_client"

# Rank 3 holds, and 1 s after it passed the store barrier (so every rank has joined and is
# holding) its wrapper SIGKILLs (or SIGSTOPs) it; the others hold up to 30 s and print each event
# with a timestamp. Checks that all 5 survivors hear of rank 3's failure between $2 and $3
# seconds after the signal.
cat > run.sh <<'RUN'
#!/bin/bash
if [ "$SLURM_PROCID" = 3 ]; then
  out=$(mktemp)
  "$1" --hold-ms 30000 > "$out" & pid=$!
  for _ in $(seq 300); do grep -q '^barrier' "$out" && break; sleep 0.1; done
  sleep 1
  rm -f "$out"
  echo "signalled $(date +%s.%N)"
  kill -"$2" $pid
  sleep 4
  kill -9 $pid
  exit 0
fi
"$1" --hold-ms 30000 | while IFS= read -r line; do echo "$(date +%s.%N) $line"; done
RUN
chmod 755 run.sh
check_failure_reported() {
  local signal=$1 min=$2 max=$3 out signalled events when delay
  local start=$SECONDS
  out=$(as_user srun -N3 -n6 --llm-rdzv ./run.sh "$test_client" "$signal" 2>&1) || true
  signalled=$(grep -Eo '^signalled [0-9.]+' <<<"$out" | cut -d' ' -f2)
  [ -n "$signalled" ] || { echo "$out" >&2; fail "rank 3 was not signalled"; }
  events=$(grep -E '^[0-9.]+ event=[a-z_]*fail[a-z_]* rank=3 ' <<<"$out" || true)
  [ -n "$events" ] && [ "$(wc -l <<<"$events")" -eq 5 ] || { echo "$out" >&2; fail "SIG$signal: not all 5 survivors were told rank 3 failed"; }
  while read -r when _; do
    delay=$(awk -v a="$when" -v b="$signalled" 'BEGIN { printf "%.3f", a - b }')
    note "SIG$signal: failure reported $delay s after the signal"
    awk -v d="$delay" -v lo="$min" -v hi="$max" 'BEGIN { exit !(d >= lo && d <= hi) }' ||
      fail "SIG$signal: failure reported after $delay s, expected $min..$max s (heartbeat timeout 2 s)"
  done <<<"$events"
  [ $((SECONDS - start)) -lt 28 ] || fail "SIG$signal: survivors did not stop holding"
}
check_failure_reported KILL 0 2.5
check_failure_reported STOP 1.5 4.5

# Cancel a step while all its tasks hold the rendezvous: rdzvd must not outlive it.
as_user srun -N3 -n3 --llm-rdzv "$test_client" --hold-ms 60000 > held.out 2>&1 &
for _ in $(seq 300); do [ -f held.out ] && [ "$(grep -c '^barrier' held.out)" -eq 3 ] && break; sleep 0.1; done
[ -n "$(cluster_rdzvd_pids)" ] || fail "no rdzvd while the step holds its rendezvous"
user=$(stat -c %U "/proc/$(cluster_rdzvd_pids | head -n1)")
[ "$user" = "$LLMRDZV_TEST_USER" ] || fail "rdzvd runs as $user, not the job's user"
job=$(squeue -h -u "$LLMRDZV_TEST_USER" -o %i | head -n1)
scancel "$job"
wait || true
expect_no_rdzvd 10

# Even when the first node's slurmstepd itself dies (SIGKILL, no slurm_spank_exit), rdzvd goes
# with it (--exit-with-parent).
as_user srun -N2 -n2 --llm-rdzv "$test_client" --hold-ms 60000 > orphan.out 2>&1 &
for _ in $(seq 300); do [ -f orphan.out ] && [ "$(grep -c '^barrier' orphan.out)" -eq 2 ] && break; sleep 0.1; done
pid=$(cluster_rdzvd_pids | head -n1)
[ -n "$pid" ] || fail "no rdzvd while the step holds its rendezvous"
stepd=$(ps -o ppid= -p "$pid" | tr -d ' ')
[ "$(cat "/proc/$stepd/comm")" = slurmstepd ] || fail "rdzvd's parent is $(cat "/proc/$stepd/comm"), not slurmstepd"
kill -9 "$stepd"
expect_no_rdzvd 5
scancel "$(squeue -h -u "$LLMRDZV_TEST_USER" -o %i | head -n1)" 2>/dev/null || true
wait || true
finish
