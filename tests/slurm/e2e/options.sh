#!/usr/bin/env bash
# srun/sbatch/salloc --help show the option; each bad argument gives "error: llm-rdzv: ..." and
# a non-zero exit in srun, sbatch and salloc; a step without the option gets none of the env;
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
check_rejected 'port=40000' "overlaps the kernel's ephemeral ports"
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

# A bad site argument fails at load, naming it; "optional" would let srun run without the plugin,
# the test cluster uses "required".
conf="$cluster_dir/plugstack.conf"
cp "$conf" plugstack.orig
trap 'cp "$work/plugstack.orig" "$conf"' EXIT
sed -i 's/$/ colour=blue/' "$conf"
set +e
out=$(as_user srun -N1 true 2>&1); rc=$?
set -e
[ $rc -ne 0 ] || fail "srun ran with a malformed plugstack.conf"
expect_match "$out" "llm-rdzv: plugstack.conf: unknown plugstack.conf argument 'colour'" "bad plugstack argument"
cp plugstack.orig "$conf"
sed -i 's/$/ port_range=40000-40100/' "$conf"
set +e
out=$(as_user srun -N1 true 2>&1); rc=$?
set -e
[ $rc -ne 0 ] || fail "srun ran with port_range inside the ephemeral ports"
expect_match "$out" "llm-rdzv: plugstack.conf: port_range: '40000-40100' overlaps the kernel's ephemeral ports" "ephemeral port_range"
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
