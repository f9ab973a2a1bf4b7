#!/usr/bin/env bash
# srun/sbatch/salloc --help show the option; each bad argument gives "error: llm-rdzv: ..." and
# a non-zero exit in srun, sbatch and salloc (a single port, ports below 1024, a repeated key);
# nodes=MIN:MAX beyond the step's nodes fails at once; --llm-rdzv=off inside an --llm-rdzv job
# drops the inherited variables; a step without the option gets none of the env;
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
job=$(job_of "$(as_user sbatch --parsable off_job.sh)")
for _ in $(seq 600); do
  [ -z "$(squeue -h -j "$job" -o %T 2>/dev/null || true)" ] && break
  sleep 0.1
done
out=$(cat off_job.out)
expect_match "$out" '^batch rank=0 token=64$' "the batch step has the env"
expect_match "$out" '^done$' "off job end"
grep -q '^leaked ' <<<"$out" && { echo "$out" >&2; fail "--llm-rdzv=off inside an --llm-rdzv job kept the batch step's variables"; }

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
