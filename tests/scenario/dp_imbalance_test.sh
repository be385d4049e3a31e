#!/usr/bin/env bash
# routing.dp_imbalance (most requests any DP rank runs over the mean per rank) on bench-small (DEP8, 1,024-token
# prompts, 128 output tokens, round-robin), seed 1.
#   Hand estimate. One request in flight (concurrency 1): whenever any runs, one rank runs 1 and the mean over 8
#   ranks is 1/8: exactly 8. 64 in flight dealt round-robin: every rank holds 8 alike requests, and a rank's
#   finished request is replaced by the next one, which round-robin deals to the next rank: close to 1
#   (at most ~1.1 from the instants a rank is one short).
set -u
exe=$1 dir=$2
source "$(dirname "$0")/effect_checks.sh"

for c in 1 64; do
  run "c$c" bench-small --set workload.concurrency=$c --set workload.requests=256 --set workload.warmup_requests=0 \
    --set deployment.router_policy=round_robin || exit 1
done
check "one in flight: DP imbalance" "$(get c1 routing.dp_imbalance)" 7.99 8.01
check "64 in flight, round-robin: DP imbalance" "$(get c64 routing.dp_imbalance)" 1 1.1
exit $fail
