#!/usr/bin/env bash
# The real trainer under `srun --llm-rdzv` on the test cluster: 4 ranks on 2 nodes train with the
# same per-step losses as one process with the same global batch (Gloo, CPU, within 1e-5), and a
# rank killed mid-run ends the others promptly with the peer-failure message and exit code 3.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/trainer_lib.sh"
common=("${tiny_training[@]}" --save_steps 0)

# One process with 4 sequences per micro-batch, then 4 ranks (2 per node) with 1 each.
as_user env OMP_NUM_THREADS=1 "$trainer" "${common[@]}" --per_device_train_batch_size 4 --max_steps 12 \
  --output_dir "$work/one" > one.out 2>&1 || { cat one.out >&2; fail "the 1-process run failed"; }
out=$(as_user env OMP_NUM_THREADS=1 srun -N2 -n4 --llm-rdzv "$trainer" "${common[@]}" \
  --per_device_train_batch_size 1 --max_steps 12 --output_dir "$work/four" 2>&1) ||
  { echo "$out" >&2; fail "srun -N2 -n4 --llm-rdzv trainer failed"; }
expect_match "$out" '^step 12/12 \| loss' "4-rank progress"
[ "$(grep -c 'step 12/12' <<<"$out")" -eq 1 ] || fail "more than rank 0 printed progress"
"$python" - "$work/one/metrics.jsonl" "$work/four/metrics.jsonl" <<'PY' || fail "4-rank losses differ from the 1-process run"
import json, sys
def losses(path):
    return [r["loss"] for r in map(json.loads, open(path)) if "loss" in r and "step" in r]
one, four = losses(sys.argv[1]), losses(sys.argv[2])
assert len(one) == len(four) == 12, (len(one), len(four))
for step, (a, b) in enumerate(zip(one, four), 1):
    print(f"# step {step}: 1 process {a:.6f}, 4 ranks {b:.6f}", file=sys.stderr)
    assert abs(a - b) <= 1e-5 * abs(a), (step, a, b)
PY

# Rank 3 is SIGKILLed at step 3; the other three must stop within seconds (heartbeat
# timeout 2 s in this cluster) with exit code 3 and a message naming the failed rank.
start=$SECONDS
rc=0
out=$(as_user env OMP_NUM_THREADS=1 OUT="$work/killed" srun -N2 -n4 --llm-rdzv ./kill_rank3.sh 3 "$trainer" \
  "${common[@]}" --per_device_train_batch_size 1 --max_steps 100000 --output_dir "$work/killed" 2>&1) || rc=$?
elapsed=$((SECONDS - start))
expect_match "$out" '^killing rank 3' "rank 3 was killed"
[ "$(grep -c 'trainer: error: rank [012] stops: rank 3 failed in round' <<<"$out")" -eq 3 ] ||
  { echo "$out" >&2; fail "not all 3 survivors reported rank 3's failure"; }
[ "$(grep -c 'Exited with exit code 3' <<<"$out")" -ge 1 ] || { echo "$out" >&2; fail "survivors did not exit with code 3"; }
[ "$rc" -ne 0 ] || fail "srun succeeded although a rank died"
[ "$elapsed" -lt 60 ] || fail "the survivors took ${elapsed}s to stop"
note "killed run ended after ${elapsed}s (srun exit $rc)"
expect_no_rdzvd 10
finish
