#!/usr/bin/env bash
# A task killed mid-run is reported to the others within the heartbeat timeout (the cluster's
# plugstack.conf sets heartbeat_timeout=2000 ms); a step cancelled while its rendezvous is held
# leaves no rdzvd behind.
source "$(dirname "$0")/lib.sh"
require_file "$test_client"

# Rank 3 holds 1.5 s and is then SIGKILLed by its wrapper; the others hold up to 30 s and print
# each event with a timestamp.
cat > run.sh <<'RUN'
#!/bin/bash
if [ "$SLURM_PROCID" = 3 ]; then
  "$1" --hold-ms 30000 & pid=$!
  sleep 1.5
  echo "killed $(date +%s.%N)"
  kill -9 $pid
  exit 0
fi
"$1" --hold-ms 30000 | while IFS= read -r line; do echo "$(date +%s.%N) $line"; done
RUN
chmod 755 run.sh
start=$SECONDS
out=$(as_user srun -N3 -n6 --llm-rdzv ./run.sh "$test_client" 2>&1) || true
elapsed=$((SECONDS - start))
killed=$(grep -Eo '^killed [0-9.]+' <<<"$out" | cut -d' ' -f2)
[ -n "$killed" ] || { echo "$out" >&2; fail "rank 3 was not killed"; }
events=$(grep -E '^[0-9.]+ event=[a-z_]*fail[a-z_]* rank=3 ' <<<"$out" || true)
[ "$(wc -l <<<"$events")" -eq 5 ] && [ -n "$events" ] || { echo "$out" >&2; fail "not all 5 survivors were told rank 3 failed"; }
while read -r when _; do
  late=$(awk -v a="$when" -v b="$killed" 'BEGIN { print (a - b > 2.5) ? 1 : 0 }')
  [ "$late" = 0 ] || fail "failure reported $(awk -v a="$when" -v b="$killed" 'BEGIN { print a - b }') s after the kill (heartbeat timeout 2 s)"
done <<<"$events"
[ $elapsed -lt 20 ] || fail "the step took $elapsed s: survivors did not stop holding"

# Cancel a step while all its tasks hold the rendezvous: rdzvd must not outlive it.
as_user srun -N3 -n3 --llm-rdzv "$test_client" --hold-ms 60000 > held.out 2>&1 &
for _ in $(seq 100); do [ "$(grep -c '^barrier' held.out 2>/dev/null)" -eq 3 ] && break; sleep 0.1; done
[ -n "$(cluster_rdzvd_pids)" ] || fail "no rdzvd while the step holds its rendezvous"
user=$(stat -c %U "/proc/$(cluster_rdzvd_pids | head -n1)")
[ "$user" = "$LLMRDZV_TEST_USER" ] || fail "rdzvd runs as $user, not the job's user"
job=$(squeue -h -u "$LLMRDZV_TEST_USER" -o %i | head -n1)
scancel "$job"
wait || true
expect_no_rdzvd 10
finish
