#!/usr/bin/env bash
# The real trainer under `srun --llm-rdzv` on the test cluster: 4 ranks on 2 nodes train with the
# same per-step losses and gradient norms as one process with the same global batch (Gloo, CPU),
# plain data parallel and with --offload optimizer (shards reduced to their owners across nodes),
# and a rank killed mid-run ends the others promptly with the peer-failure message and exit code 3.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/trainer_lib.sh"
common=("${tiny_training[@]}" --save_steps 0)

# One process with 4 sequences per micro-batch, then 4 ranks (2 per node) with 1 each; per-step
# loss within 1e-5 and gradient norm within 1e-4 (relative).
same_as_one_process() {  # NAME EXTRA_FLAGS...
  local name=$1; shift
  as_user env OMP_NUM_THREADS=1 "$trainer" "${common[@]}" "$@" --per_device_train_batch_size 4 --max_steps 12 \
    --output_dir "$work/$name-one" > "$name-one.out" 2>&1 || { cat "$name-one.out" >&2; fail "$name: the 1-process run failed"; }
  out=$(as_user env OMP_NUM_THREADS=1 srun -N2 -n4 --llm-rdzv "$trainer" "${common[@]}" "$@" \
    --per_device_train_batch_size 1 --max_steps 12 --output_dir "$work/$name-four" 2>&1) ||
    { echo "$out" >&2; fail "$name: srun -N2 -n4 --llm-rdzv trainer failed"; }
  expect_match "$out" '^step 12/12 \| loss' "$name: 4-rank progress"
  [ "$(grep -c 'step 12/12' <<<"$out")" -eq 1 ] || fail "$name: more than rank 0 printed progress"
  "$python" - "$work/$name-one/metrics.jsonl" "$work/$name-four/metrics.jsonl" <<'PY' ||
import json, sys
def series(path, key):
    return [r[key] for r in map(json.loads, open(path)) if "loss" in r and "step" in r]
for key, tolerance in (("loss", 1e-5), ("grad_norm", 1e-4)):
    one, four = series(sys.argv[1], key), series(sys.argv[2], key)
    assert len(one) == len(four) == 12, (len(one), len(four))
    for step, (a, b) in enumerate(zip(one, four), 1):
        print(f"# {key} step {step}: 1 process {a:.6f}, 4 ranks {b:.6f}", file=sys.stderr)
        assert abs(a - b) <= tolerance * abs(a), (key, step, a, b)
PY
    fail "$name: 4-rank losses or gradient norms differ from the 1-process run"
}
same_as_one_process plain
same_as_one_process offload --offload optimizer --offload_gradient_sync reduce

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
