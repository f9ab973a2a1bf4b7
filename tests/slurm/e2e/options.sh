#!/usr/bin/env bash
# srun/sbatch/salloc --help show the option; each bad argument gives "error: llm-rdzv: ..." and
# a non-zero exit in srun, sbatch and salloc (a single port, ports below 1024, a repeated key);
# nodes=MIN:MAX beyond the step's nodes, or elastic over unevenly spread tasks, fails at once, and
# sbatch's nodes= leaves the batch script alone; --llm-rdzv=off inside an --llm-rdzv job, and a
# step without the option inside an --llm-rdzv step, drop the inherited variables; a step without
# the option gets none of the env; a heterogeneous step is refused;
# bad plugstack.conf arguments stop srun naming the argument; default=on and --llm-rdzv=off.
source "$(dirname "$0")/lib.sh"

for tool in srun sbatch salloc; do
  help=$(as_user "$tool" --help 2>&1)
  expect_match "$help" '--llm-rdzv\[=ARGS\]|--llm-rdzv=ARGS' "$tool --help"
  expect_match "$help" 'nodes=MIN:MAX' "$tool --help"
done

check_rejected() {
  local args=$1 message=$2 out rc
  for tool in srun sbatch; do
    set +e
    if [ "$tool" = srun ]; then
      out=$(as_user srun -N1 "--llm-rdzv=$args" true 2>&1)
    else
      out=$(as_user sbatch -N1 "--llm-rdzv=$args" --wrap true 2>&1)
    fi
    rc=$?
    set -e
    [ $rc -ne 0 ] || fail "$tool --llm-rdzv=$args exited 0"
    expect_match "$out" "^$tool: error: llm-rdzv: .*$message" "$tool --llm-rdzv=$args"
  done
}
check_rejected 'bogus=1' "unknown key 'bogus'"
check_rejected 'nodes=4:2' "nodes: '4:2' has MIN greater than MAX"
check_rejected 'port=99999' "port: '99999' is not a port"
check_rejected 'port=40000-40010' "overlaps the kernel's ephemeral ports"
check_rejected 'port=20000' "port: '20000' is a single port; a step needs two"
check_rejected 'port=1-100' "port: '1-100' reaches below 1024"
check_rejected 'timeout=60,timeout=90' "'timeout' is given twice"
check_rejected 'addr=eth0' "addr: 'eth0' is not one of hostname, ip, iface:NAME"
check_rejected 'mode=site' 'mode=site: this site runs no site rdzvd'
check_rejected 'timeout=soon' "timeout: 'soon' is not a whole number"

set +e
out=$(as_user salloc -N1 --llm-rdzv=id='bad id' true 2>&1); rc=$?
set -e
[ $rc -ne 0 ] || fail "salloc with a bad id exited 0"
expect_match "$out" "^salloc: error: llm-rdzv: id: 'bad id' may only hold" "salloc bad id"

# No option, no environment (and no rdzvd).
plain=$(as_user srun -N2 -n2 env)
if grep -Eq '^(MASTER_ADDR|MASTER_PORT|RDZV_[A-Z]+|LLM_RDZV_[A-Z_]+|NODE_RANK|LOCAL_RANK|WORLD_SIZE)=' <<<"$plain"; then
  fail "a step without --llm-rdzv got rendezvous variables"
fi
# --llm-rdzv=off is accepted and injects nothing either.
off=$(as_user srun -N1 --llm-rdzv=off env)
grep -q '^RDZV_' <<<"$off" && fail "--llm-rdzv=off injected variables"

# nodes=MIN:MAX that the step's node count cannot satisfy fails at once with a clear message
# (it used to wait out the whole rendezvous timeout).
start=$SECONDS
set +e
out=$(as_user srun -N1 --llm-rdzv=nodes=5:8,timeout=300 true 2>&1); rc=$?
set -e
[ $rc -ne 0 ] || fail "srun -N1 --llm-rdzv=nodes=5:8 exited 0"
expect_match "$out" "llm-rdzv: nodes=5:8: the step runs on 1 node, fewer than MIN" "nodes=5:8 on one node"
[ $((SECONDS - start)) -lt 30 ] || fail "nodes=5:8 on one node took $((SECONDS - start)) s to fail"

# --llm-rdzv=off for one step of a job that has the option: its tasks get none of the batch
# step's variables (RANK=0, WORLD_SIZE=1, its token).
cat > off_job.sh <<JOB
#!/bin/bash
#SBATCH -N1 -n1 --llm-rdzv
#SBATCH -o $work/off_job.out
echo "batch rank=\${RANK-unset} token=\${#RDZV_TOKEN}"
srun --llm-rdzv=off env | grep -E '^(RANK|WORLD_SIZE|LOCAL_RANK|RDZV_[A-Z]+|MASTER_[A-Z]+|LLM_RDZV_[A-Z_]+)=' | sed 's/^/leaked /'
echo done
JOB
wait_for_job "$(job_of "$(as_user sbatch --parsable off_job.sh)")"
out=$(cat off_job.out)
expect_match "$out" '^batch rank=0 token=64$' "the batch step has the env"
expect_match "$out" '^done$' "off job end"
grep -q '^leaked ' <<<"$out" && { echo "$out" >&2; fail "--llm-rdzv=off inside an --llm-rdzv job kept the batch step's variables"; }

# A step without the option started from a step that has it (srun inside `srun --llm-rdzv`):
# its tasks do not inherit the outer step's rank, world and token either.
out=$(as_user srun -N1 -n1 --llm-rdzv sh -c 'echo "outer rank=$RANK"; srun --overlap -N1 -n1 env' 2>&1)
expect_match "$out" '^outer rank=0$' "the outer step has the env"
if grep -Eq '^(RANK|WORLD_SIZE|RDZV_[A-Z]+|MASTER_[A-Z]+|LLM_RDZV_[A-Z_]+)=' <<<"$out"; then
  echo "$out" >&2
  fail "a step without the option inside an --llm-rdzv step inherited its variables"
fi

# nodes=MIN:MAX given to sbatch is for the job's steps: the batch script (one task) still runs.
cat > nodes_job.sh <<JOB
#!/bin/bash
#SBATCH -N2 -n2 --llm-rdzv=nodes=2:2
#SBATCH -o $work/nodes_job.out
echo "batch world=\$WORLD_SIZE"
srun -N2 -n2 sh -c 'echo "step min=\$LLM_RDZV_MIN_WORLD max=\$LLM_RDZV_MAX_WORLD"'
echo done
JOB
wait_for_job "$(job_of "$(as_user sbatch --parsable nodes_job.sh)")"
out=$(cat nodes_job.out)
expect_match "$out" '^batch world=1$' "sbatch --llm-rdzv=nodes=2:2: the batch script ran"
[ "$(grep -c '^step min=2 max=2$' <<<"$out")" -eq 2 ] || { echo "$out" >&2; fail "sbatch nodes=2:2: the step's bounds"; }
expect_match "$out" '^done$' "nodes job end"

# Tasks spread unevenly: nodes=N with the step's own N nodes forms the step's world of 3; elastic
# bounds are refused at once, naming the problem (they used to expect 4 ranks and wait out the
# timeout).
out=$(as_user srun -N2 -n3 --llm-rdzv=nodes=2,timeout=30 "$test_client" 2>&1) || { echo "$out" >&2; fail "srun -N2 -n3 nodes=2"; }
[ "$(grep -c '^barrier rank=[0-2] ok$' <<<"$out")" -eq 3 ] || { echo "$out" >&2; fail "srun -N2 -n3 nodes=2: world of 3"; }
start=$SECONDS
set +e
out=$(as_user srun -N2 -n3 --llm-rdzv=nodes=1:2,timeout=300 true 2>&1); rc=$?
set -e
[ $rc -ne 0 ] || fail "srun -N2 -n3 --llm-rdzv=nodes=1:2 exited 0"
expect_match "$out" "llm-rdzv: nodes=1:2: the step's 3 tasks are not spread evenly over its 2 nodes" "uneven elastic step"
[ $((SECONDS - start)) -lt 30 ] || fail "the uneven elastic step took $((SECONDS - start)) s to fail"

# A heterogeneous step is refused with one clear line, not run with per-component ranks.
set +e
out=$(as_user srun --llm-rdzv -N1 -n2 true : -N1 -n1 true 2>&1); rc=$?
set -e
[ $rc -ne 0 ] || fail "a heterogeneous --llm-rdzv step exited 0"
expect_match "$out" "llm-rdzv: a heterogeneous step \(srun ... : ...\) is not supported" "heterogeneous step"

# A bad site argument fails at load, naming it; "optional" would let srun run without the plugin,
# the test cluster uses "required".
conf="$cluster_dir/plugstack.conf"
cp "$conf" plugstack.orig
trap 'cp "$work/plugstack.orig" "$conf"' EXIT
# srun under the plugstack.conf line edited by the sed expression $1 must fail, naming the problem.
rejected_by_plugstack() {
  local edit=$1 message=$2 out rc
  cp plugstack.orig "$conf"
  sed -i "$edit" "$conf"
  set +e
  out=$(as_user srun -N1 true 2>&1); rc=$?
  set -e
  [ $rc -ne 0 ] || fail "srun ran with plugstack.conf edited by '$edit'"
  expect_match "$out" "llm-rdzv: plugstack.conf: $message" "plugstack.conf edited by '$edit'"
}
rejected_by_plugstack 's/$/ colour=blue/' "unknown plugstack.conf argument 'colour'"
rejected_by_plugstack 's/ port_range=[0-9-]*/ port_range=40000-40100/' "port_range: '40000-40100' overlaps the kernel's ephemeral ports"
# A key given twice is refused, not silently overridden by the later one.
rejected_by_plugstack 's/$/ timeout=30 timeout=60/' "'timeout' is given twice"
# A site default turns it on for every step; --llm-rdzv=off turns it off again for one step.
cp plugstack.orig "$conf"
sed -i 's/$/ default=on/' "$conf"
on=$(as_user srun -N2 -n2 sh -c 'echo "$RDZV_ID $WORLD_SIZE $SLURM_JOB_ID.$SLURM_STEP_ID"' | sort -u)
[ "$(wc -l <<<"$on")" -eq 1 ] || fail "default=on: tasks disagree: $on"
read -r id world step <<<"$on"
[ "$id" = "$step" ] && [ "$world" = 2 ] || fail "default=on did not inject the env: $on"
off=$(as_user srun -N1 --llm-rdzv=off env)
grep -q '^RDZV_' <<<"$off" && fail "--llm-rdzv=off under default=on injected variables"
cp plugstack.orig "$conf"
trap - EXIT
finish
