#!/usr/bin/env bash
# A per-step rdzvd whose log file cannot be created (issue 39, item 3: the errno was lost and the
# advice was wrong) fails the step at once with the errno and the fix that fits: a log_dir that
# does not exist on the node, and one owned by another user that jobs' users may not write into
# (here the attacker's, mode 0755). The site's log_dir is edited in plugstack.conf, as an admin
# would get it wrong, and put back afterwards.
source "$(dirname "$0")/lib.sh"
require_file "$test_client"
attacker=${LLMRDZV_ATTACKER_USER:?the cluster has no attacker user: rerun scripts/slurm/cluster.sh up}
conf="$cluster_dir/plugstack.conf"
cp "$conf" plugstack.orig
trap 'cp "$work/plugstack.orig" "$conf"' EXIT

# A step under log_dir=$1 fails within seconds with a line matching $2.
step_fails_naming() {
  local dir=$1 message=$2 out rc start
  cp plugstack.orig "$conf"
  sed -i "s| log_dir=[^ ]*| log_dir=$dir|" "$conf"
  grep -q " log_dir=$dir " "$conf" || fail "plugstack.conf has no log_dir to edit"
  start=$SECONDS
  set +e
  out=$(as_user srun -N1 -n1 --llm-rdzv "$test_client" 2>&1)
  rc=$?
  set -e
  [ $rc -ne 0 ] || { echo "$out" >&2; fail "a step ran with log_dir=$dir"; }
  expect_match "$out" "$message" "log_dir=$dir"
  [ $((SECONDS - start)) -lt 15 ] || { echo "$out" >&2; fail "log_dir=$dir: the failure took $((SECONDS - start)) s"; }
}

uid=$(id -u "$LLMRDZV_TEST_USER")
missing="$work/no-such-logs"
step_fails_naming "$missing" \
  "could not create its log file $missing/rdzvd-[^ ]+ as uid $uid: No such file or directory \(the log directory $missing does not exist: create it on every node"
mkdir theirs && chown "$attacker" theirs && chmod 755 theirs
step_fails_naming "$work/theirs" \
  "could not create its log file $work/theirs/rdzvd-[^ ]+ as uid $uid: Permission denied \(jobs' users may not create files in $work/theirs: make it writable for them and sticky"
[ -z "$(ls -A theirs)" ] || fail "a file appeared in the other user's directory"

cp plugstack.orig "$conf"
trap - EXIT
out=$(as_user srun -N1 -n1 --llm-rdzv "$test_client" 2>&1) || { echo "$out" >&2; fail "the step failed with log_dir restored"; }
expect_match "$out" '^barrier rank=0 ok$' "the step with log_dir restored"
expect_no_rdzvd 5
finish
