#!/usr/bin/env bash
# The env every task gets across 3 nodes with 6 tasks, and MASTER_ADDR policies (ip, iface).
source "$(dirname "$0")/lib.sh"

out=$(as_user srun -N3 -n6 --llm-rdzv sh -c 'echo "$SLURM_PROCID $RANK $LOCAL_RANK $SLURM_LOCALID $WORLD_SIZE $LOCAL_WORLD_SIZE $SLURM_NODEID $NODE_RANK $GROUP_RANK $NNODES $MASTER_ADDR $MASTER_PORT $RDZV_ENDPOINT $RDZV_ID $LLM_RDZV_MIN_WORLD $LLM_RDZV_MAX_WORLD $LLM_RDZV_PORT_RANGE $LLM_RDZV_TIMEOUT ${#RDZV_TOKEN} $SLURM_JOB_ID $SLURM_STEP_ID"')
[ "$(wc -l <<<"$out")" -eq 6 ] || fail "expected 6 task lines, got: $out"
while read -r procid rank lrank localid world lworld nodeid noderank grouprank nnodes maddr mport endpoint id minw maxw range timeout toklen job step; do
  [ "$rank" = "$procid" ] || fail "RANK $rank != SLURM_PROCID $procid"
  [ "$lrank" = "$localid" ] || fail "LOCAL_RANK $lrank != SLURM_LOCALID $localid"
  [ "$noderank" = "$nodeid" ] && [ "$grouprank" = "$nodeid" ] || fail "NODE_RANK/GROUP_RANK $noderank/$grouprank != $nodeid"
  [ "$world" = 6 ] && [ "$nnodes" = 3 ] && [ "$minw" = 6 ] && [ "$maxw" = 6 ] || fail "sizes: $world $nnodes $minw $maxw"
  [ "$maddr" = lr-node1 ] || fail "MASTER_ADDR $maddr"
  [ "$id" = "$job.$step" ] || fail "RDZV_ID $id != $job.$step"
  [ "$range" = 20000-20999 ] && [ "$timeout" = 300 ] && [ "$toklen" = 64 ] || fail "range/timeout/token: $range $timeout $toklen"
  [ "$mport" -ge 20000 ] && [ "$mport" -le 20999 ] || fail "MASTER_PORT $mport out of range"
  [[ "$endpoint" =~ ^lr-node1:(20[0-9]{3})$ ]] && [ "${BASH_REMATCH[1]}" != "$mport" ] || fail "RDZV_ENDPOINT $endpoint"
  echo "$lworld" >> lworld
done <<<"$out"
[ "$(sort -u <<<"$(cut -d' ' -f2 <<<"$out")" | wc -l)" -eq 6 ] || fail "ranks not distinct"
[ "$(cut -d' ' -f11-14,19 <<<"$out" | sort -u | wc -l)" -eq 1 ] || fail "tasks disagree on MASTER/endpoint/id/token length"

# The site's port_probes reaches the tasks, so they walk as many candidate ports as rdzvd does.
probes=$(as_user srun -N2 -n2 --llm-rdzv sh -c 'echo $LLM_RDZV_PORT_PROBES' | sort -u)
[ "$probes" = 8 ] || fail "LLM_RDZV_PORT_PROBES: $probes (plugstack.conf sets no port_probes: 8)"

# Tokens: the same in every task of a step, different between steps.
t1=$(as_user srun -N2 -n2 --llm-rdzv sh -c 'echo $RDZV_TOKEN' | sort -u)
t2=$(as_user srun -N2 -n2 --llm-rdzv sh -c 'echo $RDZV_TOKEN' | sort -u)
[ "$(wc -l <<<"$t1")" -eq 1 ] || fail "tasks of one step got different tokens"
[ "$t1" != "$t2" ] || fail "two steps got the same token"

# srun --export=NONE still carries the token (through a SLURM_* variable the tasks never see).
none=$(as_user srun -N2 -n2 --export=NONE --llm-rdzv /usr/bin/env)
[ "$(grep -Ec '^RDZV_TOKEN=[0-9a-f]{64}$' <<<"$none")" -eq 2 ] || fail "--export=NONE: no token in the tasks"
grep -q '^SLURM_LLM_RDZV_TOKEN=' <<<"$none" && fail "the token carrier leaked into the tasks"

# Elastic bounds and user keys.
out=$(as_user srun -N2 -n4 --ntasks-per-node=2 --llm-rdzv=nodes=1:3,timeout=45,id=my-run,port=20500-20599 sh -c 'echo $LLM_RDZV_MIN_WORLD $LLM_RDZV_MAX_WORLD $LLM_RDZV_TIMEOUT $RDZV_ID $LLM_RDZV_PORT_RANGE $MASTER_PORT' | sort -u)
read -r minw maxw timeout id range mport <<<"$out"
[ "$minw $maxw $timeout $id $range" = "2 6 45 my-run 20500-20599" ] || fail "user keys: $out"
[ "$mport" -ge 20500 ] && [ "$mport" -le 20599 ] || fail "MASTER_PORT $mport outside port=20500-20599"

# MASTER_ADDR policies: the first node's resolved address, and its address on eth0's subnet.
ip_addr=$(as_user srun -N3 -n3 --llm-rdzv=addr=ip sh -c 'echo $MASTER_ADDR $RDZV_ENDPOINT' | sort -u)
[ "$(wc -l <<<"$ip_addr")" -eq 1 ] && [[ "$ip_addr" == "172.30.77.11 172.30.77.11:"* ]] || fail "addr=ip: $ip_addr"
if_addr=$(as_user srun -N3 -n3 --llm-rdzv=addr=iface:eth0 sh -c 'echo $MASTER_ADDR' | sort -u)
[ "$if_addr" = 172.30.77.11 ] || fail "addr=iface:eth0: $if_addr"
set +e
out=$(as_user srun -N1 --llm-rdzv=addr=iface:ib0 true 2>&1); rc=$?
set -e
[ $rc -ne 0 ] || fail "addr=iface:ib0 on nodes without ib0 exited 0"
expect_match "$out" 'llm-rdzv: addr: iface:ib0: this node has no interface ib0' "addr=iface:ib0"
expect_no_rdzvd 5
finish
