#!/usr/bin/env bash
# In-process elastic restart under Slurm: `srun -N2 -n4 --ntasks-per-node=2 --llm-rdzv=nodes=1:2 trainer ...` (an
# elastic step: 2 to 4 ranks, one or two nodes of 2 tasks). Rank 3's trainer is SIGKILLed after the
# first checkpoint (its wrapper then exits 0, so Slurm keeps the step, as a node that lost one
# process would). The three survivors learn it from rdzvd, each says so in one line, re-executes
# itself, and they form round 2 as a world of 3 after the last call, resume from the last
# checkpoint and finish: srun exits 0, metrics.jsonl (cut back to the checkpoint's step when the
# run resumed) lists every step to max_steps once, and the final model is written.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/trainer_lib.sh"
max_steps=200
args=("${tiny_training[@]}" --per_device_train_batch_size 1 --save_steps 20 --max_steps "$max_steps"
      --output_dir "$work/elastic")

# Rank 3 is SIGKILLed at step 30: after checkpoint-20 and, on a quiet machine, before checkpoint-40.

start=$SECONDS
rc=0
out=$(as_user env OMP_NUM_THREADS=1 OUT="$work/elastic" srun -N2 -n4 --ntasks-per-node=2 --llm-rdzv=nodes=1:2 ./kill_rank3.sh 30 "$trainer" \
  "${args[@]}" 2>&1) || rc=$?
elapsed=$((SECONDS - start))
[ "$rc" -eq 0 ] || { echo "$out" >&2; fail "the elastic step failed (srun exit $rc)"; }
expect_match "$out" '^killing rank 3 at step [0-9]+' "rank 3 was killed"
restarts=$(grep -Ec '^trainer: rank [012]: rank 3 failed in round 1; re-joining the rendezvous, resuming from checkpoint-[0-9]+ \(restart 1 of 3\)$' <<<"$out" || true)
[ "$restarts" -eq 3 ] || { echo "$out" >&2; fail "expected one restart line from each of the 3 survivors, got $restarts"; }
rejoined=$(grep -Ec "^trainer: re-joined rendezvous '[^']+' in round 2 as rank [012] of 3 \(restart 1 of 3\)$" <<<"$out" || true)
[ "$rejoined" -eq 3 ] || { echo "$out" >&2; fail "expected the 3 survivors in round 2 as a world of 3, got $rejoined lines"; }
! grep -q 'trainer: error' <<<"$out" || { echo "$out" >&2; fail "a rank reported an error"; }
expect_match "$out" "^step $max_steps/$max_steps \\| loss" "progress of the restarted run"

resumed=$(grep -Eo '^resuming from .*checkpoint-[0-9]+ at step [0-9]+$' <<<"$out" | grep -Eo '[0-9]+$' || true)
[ -n "$resumed" ] && [ $((resumed % 20)) -eq 0 ] && [ "$resumed" -ge 20 ] ||
  { echo "$out" >&2; fail "the restarted run did not resume from a checkpoint (got '$resumed')"; }
"$python" - "$work/elastic" "$max_steps" <<'PY' || { echo "$out" >&2; fail "metrics.jsonl does not list every step once"; }
import json, os, sys
out, max_steps = sys.argv[1], int(sys.argv[2])
steps = [r["step"] for r in map(json.loads, open(os.path.join(out, "metrics.jsonl"))) if "loss" in r and "step" in r]
assert steps == list(range(1, max_steps + 1)), f"steps logged: {steps[:5]}...{steps[-5:]} ({len(steps)})"
results = json.load(open(os.path.join(out, "all_results.json")))
assert results["global_step"] == max_steps, results
for name in ("model.safetensors", "config.json", f"checkpoint-{max_steps}"):
    assert os.path.exists(os.path.join(out, name)), f"no {name}"
PY
note "$(grep -E '^killing rank 3' <<<"$out"); the elastic run finished after ${elapsed}s"
expect_no_rdzvd 10
finish
