#!/usr/bin/env bash
# Keeps rdzv-bench working (it is not run by any other test): every --barrier x --protocol mode
# with a few participants against its own rdzvd must finish and print its JSON summary with the
# fields the issue names. Not a timing test: only that the numbers are there and consistent.
#   rdzv_bench_smoke.sh BENCH_BINARY
set -euo pipefail
bench=${1:?usage: rdzv_bench_smoke.sh BENCH_BINARY}
n=16
for barrier in add-wait rpc; do
  for protocol in stream calls; do
    out=$("$bench" --participants "$n" --barrier "$barrier" --protocol "$protocol" --timeout 60)
    python3 - "$n" "$barrier" "$protocol" "$(tail -n 1 <<<"$out")" <<'PY'
import json, sys
n, barrier, protocol, line = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
summary = json.loads(line)
assert summary["participants"] == n, summary
assert summary["barrier"] == barrier and summary["protocol"] == protocol, summary
assert 0 < summary["p50_ms"] <= summary["p99_ms"] <= summary["total_ms"], summary
assert summary["rdzvd_rss_mib"] > 1, summary
print(f"{barrier}/{protocol}: total {summary['total_ms']} ms, rdzvd {summary['rdzvd_rss_mib']} MiB")
PY
  done
done
