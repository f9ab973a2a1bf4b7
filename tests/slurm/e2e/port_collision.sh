#!/usr/bin/env bash
# Ports taken by other rendezvous: with --llm-rdzv=port=20700-20703 and rdzvds of three other
# rendezvous already on 20700-20702 of the first node, the step's rdzvd moves along the probe
# sequence to the free port, and the clients follow it there (skipping the foreign rendezvous)
# instead of meeting another step's rdzvd.
source "$(dirname "$0")/lib.sh"
require_file "$test_client"
rdzvd="$rdzvd_bin"
require_file "$rdzvd"

foreign=()
cleanup() { [ ${#foreign[@]} -eq 0 ] || kill "${foreign[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT
for port in 20700 20701 20702; do
  LLM_RDZV_TOKEN=foreign-token nsenter --net=/run/netns/lrdzv-n1 "$rdzvd" --mode step --rdzv-id "foreign.$port" \
    --listen "0.0.0.0:$port" --port-file "$work/foreign.$port" --exit-with-parent > "foreign.$port.log" 2>&1 &
  foreign+=($!)
done
for port in 20700 20701 20702; do
  for _ in $(seq 400); do [ -s "foreign.$port" ] && break; sleep 0.05; done
  [ "$(cat "foreign.$port" 2>/dev/null)" = "$port" ] || { cat "foreign.$port.log" >&2; fail "foreign rdzvd on $port did not start"; }
done

# The base port comes from the job id: repeat until a step's base is one of the taken ports
# (3 in 4 chances each time), so the probe sequence is really walked.
probed=0
for attempt in 1 2 3 4 5 6 7 8; do
  out=$(as_user srun -N3 -n6 --llm-rdzv=port=20700-20703 sh -c 'echo "step=$SLURM_JOB_ID.$SLURM_STEP_ID endpoint=$RDZV_ENDPOINT"; exec "$0"' "$test_client" 2>&1) ||
    { echo "$out" >&2; fail "srun failed"; }
  [ "$(grep -Eo '^rank=[0-9]+ world=6 ' <<<"$out" | sort -u | wc -l)" -eq 6 ] || { echo "$out" >&2; fail "ranks"; }
  [ "$(grep -c '^barrier rank=[0-5] ok$' <<<"$out")" -eq 6 ] || { echo "$out" >&2; fail "barrier"; }
  read -r step endpoint <<<"$(grep -m1 '^step=' <<<"$out" | sed 's/step=//; s/endpoint=//')"
  grep -q 'listening on 0.0.0.0:20703 ' "$cluster_dir"/rdzvd-logs/rdzvd-"$step"-*.log ||
    fail "step $step's rdzvd did not end up on the free port 20703"
  note "attempt $attempt: base $endpoint, rdzvd on 20703"
  if [ "$endpoint" != lr-node1:20703 ]; then probed=1; break; fi
done
[ $probed = 1 ] || fail "8 steps in a row had the free port as their base"
for pid in "${foreign[@]}"; do kill -0 "$pid" || fail "a foreign rdzvd died"; done
trap - EXIT
cleanup
expect_no_rdzvd 5
finish
