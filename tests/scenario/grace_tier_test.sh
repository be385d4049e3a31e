#!/usr/bin/env bash
# The Grace tier on 256K-token agent sessions (issue 17 item 4), seed 1.
# grace-tier-offload: GLM-5 on DEP4, 48 sessions x 3 turns over a 256K context, ~40 open at once against
# ~5 contexts per GPU of HBM: every later turn's prefix has left HBM, so with the tier it is loaded from
# Grace, without it recomputed.
#   Hand estimate. A 256K-token prefill on one DP rank takes S of tens of seconds (FP8 at 70% of 5 PF:
#   ~6 s for 40B active parameters, ~6 s for the DSA indexer's n^2 scores, more with the all-to-alls and
#   the lockstep group); a load of its ~14 GB over C2C at 201 GB/s ~ 72 ms, then ~2.3K new tokens (<1 s).
#   Turn 1 costs S + queueing both ways; with the tier turns 2-3 cost ~1 s instead of S, so mean TTFT on /
#   off ~ (S + 2 x 1 s) / 3S ~ 1/3 when queueing is alike, lower when the off run's triple prefill work
#   queues more: 0.25 .. 0.45. Throughput (output tokens over the run): off needs ~3x the prefill work,
#   144 x S / 4 ranks ~ 1000 s at S ~ 30 s, about the ~1000 s the arrivals and think times span anyway,
#   so the tier shortens the run by the queueing it saves: on / off ~ 1.1 .. 2.
#   Grace hits: 2 of 3 turns find ~262K of their ~264K prompt tokens in Grace: ~66% of prompt tokens.
#   C2C bytes: loads ~96 x 14.4 GB ~ 1.4 TB; offloads (write-through) ~ every prompt block once: ~48 x
#   (14.4 GB + 2 x 0.13 GB) ~ 0.7 TB.
#   HBM evictions (kv.gpu_evicted_tokens), the same with the tier or without (it changes where a prefix is
#   found, not what HBM holds): each turn stores its whole prompt (~48 x 3 x 264K ~ 38M tokens) and all but
#   what HBM holds at the end (~5 contexts x 4 GPUs ~ 5.3M) is evicted: ~33M.
# grace-c2c-shared: the same sessions on GPUs 0 and 1, one Grace's two GPUs: the same checks on the tier's
# use, and that its copies crossed the shared Grace memory channel.
set -u
exe=$1 dir=$2
source "$(dirname "$0")/effect_checks.sh"

run on grace-tier-offload || exit 1
run off grace-tier-offload --set deployment.grace_tier=off || exit 1
check "offload: Grace hit rate, tier on" "$(get on kv.hit_rate_grace)" 0.6 0.7
check "offload: Grace hit rate, tier off" "$(get off kv.hit_rate_grace)" 0 0
check "offload: TTFT on / off" "$(ratio "$(get on latency_ms.ttft.mean)" "$(get off latency_ms.ttft.mean)")" 0.25 0.45
check "offload: output throughput on / off" \
  "$(ratio "$(get on throughput.output_tokens_per_s)" "$(get off throughput.output_tokens_per_s)")" 1.1 2
check "offload: TB loaded over C2C" "$(python3 -c "print($(get on kv.grace_load_bytes) / 1e12)")" 1.2 1.6
check "offload: TB offloaded over C2C" "$(python3 -c "print($(get on kv.grace_offload_bytes) / 1e12)")" 0.6 0.8
check "offload: C2C bytes, tier off" "$(get off kv.grace_load_bytes)" 0 0
check "offload: M tokens evicted from HBM, tier on" "$(python3 -c "print($(get on kv.gpu_evicted_tokens) / 1e6)")" 30 36
check "offload: M tokens evicted from HBM, tier off" "$(python3 -c "print($(get off kv.gpu_evicted_tokens) / 1e6)")" 30 36

run shared grace-c2c-shared || exit 1
check "c2c-shared: Grace hit rate" "$(get shared kv.hit_rate_grace)" 0.6 0.7
check "c2c-shared: Grace memory used" "$(get shared links.host_memory.mean_utilisation)" 1e-6 1
exit $fail
