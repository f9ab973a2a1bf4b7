#!/usr/bin/env bash
# A real PyTorch program under `srun -N2 -n4 --llm-rdzv python ...`: env:// + gloo all-reduce,
# no torchrun. Every rank must see sum(1..4) = 10.
source "$(dirname "$0")/lib.sh"
python=${LLMRDZV_PYTHON:-}
[ -x "$python" ] || { echo "no project venv python ($python): skipped" >&2; exit 77; }

out=$(as_user srun -N2 -n4 --llm-rdzv "$python" "$e2e_dir/allreduce.py" 2>&1) || { echo "$out" >&2; fail "srun failed"; }
for rank in 0 1 2 3; do
  expect_match "$out" "^allreduce rank=$rank world=4 sum=10$" "rank $rank"
done
[ "$(grep -c '^allreduce' <<<"$out")" -eq 4 ] || fail "expected 4 ranks: $out"
expect_no_rdzvd 5
finish
