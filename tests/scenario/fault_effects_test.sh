#!/usr/bin/env bash
# What each slowing fault costs (issue 17 item 6): the fault scenario against the same scenario with
# `faults` removed, on seed 1, its TPOT or TTFT checked for direction and rough size against the hand
# estimate written beside each check. "whole run" variants hold the fault from 0 s to the end, so the
# size is not diluted by the hours the scenario runs without it (its fault lasts 60 to 120 s of ~1600 s).
# Decode here is a few requests on DP ranks 0-3 of DeepSeek-V3 on EP8: HBM-bound (attention weights and
# the weights of the experts its tokens chose, read every step), and its all-to-alls carry ~57 KB per rank per call (a token's top-8 copies of
# 7168 fp8 bytes), 0.06 us at 900 GB/s against ~10 us of fixed cost: latency-bound.
set -u
exe=$1 dir=$2
source "$(dirname "$0")/effect_checks.sh"
# latencies NAME SCENARIO ARGS...: prints "TTFT TPOT" (means, ms) of the run.
latencies() { run "$@" && get "$1" latency_ms.ttft.mean latency_ms.tpot.mean; }
whole=(--set 'faults[0].at_s=0' --set 'faults[0].duration_s=4000')

# Straggler: normal rank 4 throttled. At clock factor f, compute-bound kernels take 1/f and HBM-bound
# ones 1 / (1 - 0.5 (1 - f)) (gb300.json's throttle_memory_coupling 0.5): 1.33x at f 0.5, 1.82x at f 0.1;
# the all-to-alls and launch gaps not at all. Cache-aware routing keeps this workload's 8 sessions on
# ranks 0-3, so rank 4 holds no request: each MoE layer it only runs the grouped GEMM of the pairs the
# others send its 33 expert slots, HBM-bound on the experts some token chose. With ~5 tokens a step
# (~40 pairs), each rank draws ~5 of its experts (~30 us at 44 MB each), and the expert phase of a layer
# waits for the rank that drew the most (of 8: ~8, ~50 us). At 1.33x rank 4 (~40 us) is seldom that
# rank: TPOT within +2% all run. At 1.82x (~55 us) it mostly is: +5-10 us in each of 58 layers, ~0.5 ms
# on ~9.7 ms: TPOT x 1.03 .. 1.15 all run, and +0.5% .. +8% with the 120 s throttle (the sessions'
# busiest minutes come first).
throttle=(--set 'faults[0].factor=0.1')
read -r base_ttft base_tpot < <(latencies straggler-none straggler --set 'faults=[]') || fail=1
read -r _ tpot < <(latencies straggler straggler "${throttle[@]}") || fail=1
read -r _ whole_tpot < <(latencies straggler-whole straggler "${whole[@]}" "${throttle[@]}") || fail=1
read -r _ half_tpot < <(latencies straggler-half straggler "${whole[@]}") || fail=1
check "straggler: TPOT with / without the 120 s throttle to 0.1" "$(ratio "$tpot" "$base_tpot")" 1.005 1.08
check "straggler: TPOT throttled to 0.1 all run / never" "$(ratio "$whole_tpot" "$base_tpot")" 1.03 1.15
check "straggler: TPOT throttled to 0.5 all run / never" "$(ratio "$half_tpot" "$base_tpot")" 0.998 1.02
# NVLink error: 6 of normal rank 1's 18 ports down leave it 12/18 of its NVLink bandwidth, so the data
# part of what crosses them takes 1.5x. Decode's all-to-alls are latency-bound (above): their data part
# is ~0.5% of each call, so TPOT moves by well under 1% even with the ports down all run. With 17 of 18
# down all run (data 18x slower), the local prefills' all-to-alls (~10 MB per prompt token over the
# 58 MoE layers, ~11 us per token at 900 GB/s beside ~30 us of compute; flows into rank 1 from every
# rank's prefill slowed) lengthen TTFT by a few per cent, at most +50%.
read -r base_ttft base_tpot < <(latencies nvlink-none nvlink-error --set 'faults=[]') || fail=1
read -r _ whole_tpot < <(latencies nvlink-whole nvlink-error "${whole[@]}") || fail=1
read -r most_ttft most_tpot < <(latencies nvlink-17 nvlink-error "${whole[@]}" --set 'faults[0].links=17') || fail=1
check "nvlink_error: TPOT with 6 ports down all run / none" "$(ratio "$whole_tpot" "$base_tpot")" 0.99 1.01
check "nvlink_error: TTFT with 17 ports down all run / none" "$(ratio "$most_ttft" "$base_ttft")" 1.02 1.5
check "nvlink_error: TPOT with 17 ports down all run / none" "$(ratio "$most_tpot" "$base_tpot")" 1.0 1.05

# Link degrade: the first prefill GPU's NIC link at a quarter of its bandwidth. The prefill worker's
# prompts (> 2,048 uncached tokens, ~10K on average: ~350 MB of KV at 35 KB per token) write their KV
# to the decode rank over RDMA through it: ~4 ms at 90 GB/s becomes ~16 ms, on about a third of the
# requests, and the next prompt's KV queues behind it: TTFT rises, by a few per cent over the whole run
# (at most +50%); decode does not cross the NIC (TPOT within 1%).
read -r base_ttft base_tpot < <(latencies degrade-none link-degrade --set 'faults=[]') || fail=1
read -r ttft _ < <(latencies degrade link-degrade) || fail=1
read -r whole_ttft whole_tpot < <(latencies degrade-whole link-degrade "${whole[@]}") || fail=1
check "link_degrade: TTFT with / without the 120 s degrade" "$(ratio "$ttft" "$base_ttft")" 1.001 1.2
check "link_degrade: TTFT degraded all run / never" "$(ratio "$whole_ttft" "$base_ttft")" 1.02 1.5
check "link_degrade: TPOT degraded all run / never" "$(ratio "$whole_tpot" "$base_tpot")" 0.99 1.01
exit $fail
