#!/usr/bin/env bash
# A second user on the step's first node squats half of the step's port range with fake rdzvds
# (answering OK to every call) and raw listeners (recording every byte, never answering), before
# the victim's steps start. Every victim step still forms its rendezvous (rank 0 is warned when
# its MASTER_PORT is squatted), and the attacker's loot holds neither a victim's token nor a
# ticket: only Hello calls reached the fakes. A task told the fake's endpoint directly fails at
# once, naming it. A rank whose Join asks for another
# size than the step's is refused without disturbing the step.
source "$(dirname "$0")/lib.sh"
require_file "$test_client"
attacker=${LLMRDZV_ATTACKER_USER:?the cluster has no attacker user: rerun scripts/slurm/cluster.sh up}

lo=20900 hi=20907
squatted=(20900 20901 20902 20903)
start_squatters fake 20900 20902
start_squatters raw 20901 20903
[ "$(stat -c %U "/proc/${squatters[0]}")" = "$attacker" ] || fail "the impostors do not run as $attacker"

# srun picks the step's rdzvd port and MASTER_PORT at random in the range: repeat until a step's
# rdzvd base was one of the squatted ports (1 in 2 each time), so the ranks really knocked on the
# attacker's doors, and until a step's MASTER_PORT was squatted too: rdzvd's clients never use it,
# so that step works as well, and rank 0 is warned, the holder named (security_master_port.sh has
# what a c10d program makes of it).
base_squatted=0 master_squatted=0
is_squatted() { [[ " ${squatted[*]} " == *" $1 "* ]]; }
for attempt in $(seq 16); do
  out=$(as_user srun -N2 -n2 "--llm-rdzv=port=$lo-$hi" sh -c \
    'echo "step=$SLURM_JOB_ID.$SLURM_STEP_ID endpoint=$RDZV_ENDPOINT master_port=$MASTER_PORT"; printf "%s\n" "$RDZV_TOKEN" > "victim.token.$SLURM_JOB_ID.$SLURM_PROCID"; exec "$0"' \
    "$test_client" 2>&1) || { echo "$out" >&2; fail "a victim step failed with the squatters up"; }
  [ "$(grep -c '^barrier rank=[01] ok$' <<<"$out")" -eq 2 ] || { echo "$out" >&2; fail "victim barrier"; }
  endpoint=$(grep -m1 -Eo 'endpoint=[^ ]+' <<<"$out" | cut -d= -f2)
  master_port=$(grep -m1 -Eo 'master_port=[0-9]+' <<<"$out" | cut -d= -f2)
  if is_squatted "${endpoint##*:}" && [ $base_squatted = 0 ]; then
    base_squatted=1
    note "attempt $attempt: rdzvd base $endpoint was squatted; the ranks found the real rdzvd"
  fi
  if is_squatted "$master_port"; then
    expect_match "$out" "^llm-rdzv: warning: MASTER_PORT $master_port on lr-node1 is taken by a listening socket of uid [0-9]+ \\($attacker\\)" \
      "the warning naming the squatter of MASTER_PORT $master_port"
    [ $master_squatted = 1 ] || note "attempt $attempt: MASTER_PORT $master_port was squatted; the step worked, rank 0 was warned"
    master_squatted=1
  elif grep -q 'warning: MASTER_PORT' <<<"$out"; then
    echo "$out" >&2; fail "a warning about the free MASTER_PORT $master_port"
  fi
  [ $base_squatted = 1 ] && [ $master_squatted = 1 ] && break
done
[ $base_squatted = 1 ] || fail "16 victim steps in a row had a free rdzvd base port"
[ $master_squatted = 1 ] || fail "16 victim steps in a row had a free MASTER_PORT"

# Told the fake's endpoint alone, a task gives up at once and names it.
start=$SECONDS
set +e
direct=$(as_user srun -N1 -n1 --llm-rdzv sh -c \
  'export RDZV_ENDPOINT=lr-node1:20900; unset LLM_RDZV_PORT_RANGE; exec "$0"' "$test_client" 2>&1)
rc=$?
set -e
[ $rc -ne 0 ] || { echo "$direct" >&2; fail "a task accepted the fake rdzvd"; }
expect_match "$direct" 'permission_denied: rdzvd lr-node1:20900 .*did not prove it holds the rendezvous token' "fake refused by name"
[ $((SECONDS - start)) -lt 15 ] || fail "refusing the fake took $((SECONDS - start)) s"

stop_squatters
# What the attacker got: Hellos only, and no token or ticket.
for tokens in victim.token.*; do
  token=$(cat "$tokens")
  [ ${#token} -eq 64 ] || fail "no victim token in $tokens"
  if grep -rqF -- "$token" loot/; then fail "a victim's token reached the attacker"; fi
done
if grep -rqaF 't2.' loot/; then fail "a ticket reached the attacker"; fi
hellos=$(cat loot/fake.*.methods | grep -c '^/llmrdzv.v1.Rendezvous/Hello$' || true)
others=$(cat loot/fake.*.methods | grep -vc '^/llmrdzv.v1.Rendezvous/Hello$' || true)
[ "$hellos" -gt 0 ] || fail "no Hello reached the fake daemons (the attack was not exercised)"
[ "$others" -eq 0 ] || { cat loot/fake.*.methods >&2; fail "the fakes got calls other than Hello"; }
note "the fakes got $hellos Hello calls and nothing else; raw squatters got $(cat loot/raw.* | wc -c) bytes, no secret"

# A rank asking for another size than the step's is refused at once; the step forms as sized.
out=$(as_user srun -N2 -n2 --llm-rdzv sh -c \
  'LLM_RDZV_MIN_WORLD=16384 LLM_RDZV_MAX_WORLD=16384 "$0" 2>&1 && echo "oversized-join accepted"; exec "$0"' \
  "$test_client" 2>&1) || { echo "$out" >&2; fail "the step failed after an oversized Join"; }
if grep -q 'oversized-join accepted' <<<"$out"; then echo "$out" >&2; fail "a 16384-participant Join was accepted"; fi
expect_match "$out" 'rdzv-test-client: failed_precondition: .*16384' "oversized Join refused"
[ "$(grep -c '^barrier rank=[01] ok$' <<<"$out")" -eq 2 ] || { echo "$out" >&2; fail "barrier after the oversized Join"; }
expect_no_rdzvd 5
finish
