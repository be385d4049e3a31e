#!/usr/bin/env bash
# Kernels priced from measured tables (cluster.kernel_library, issue 18) on ci/small-pd.json: DeepSeek-V3
# FP8, a DEP8 decode pool decoding one to three requests per GPU, so its GEMMs run at m = 1..3.
#   Hand estimate. gb300/gemm_sglang.csv times a small-m FP8 GEMM (block-scaled, its activation
#   quantisation included) at about 17 us whatever its size below ~40 MB of weights, where the roofline
#   at 80% of 8 TB/s gives 0.6-6 us. Per MoE layer at m = 2: q_a and kv_a fused (n 2,112, between the
#   sites at 2,048 and 2,560: 17.9-19.7) ~18 (roofline 2.4), q_b 33.7 (5.9; off the sites, from the four
#   nearest), o 37.8 (18.4), gate (BF16) 5.2 (0.6), shared up 20.6 (4.6), shared down 19.3 (2.3): 134.6 us
#   against 34.2, +100 us a layer, ~+6.1 ms over 61 layers (the 3 dense layers' FFN GEMMs cost about the
#   shared expert's difference too). MLA decode from the table: its ~12 us floor against ~2 us on the
#   roofline, ~+0.6 ms. The LM head (BF16, 1.85 GB) is memory-bound in both. So TPOT p50 rises by ~6.7 ms:
#   5.5 .. 9 ms accepted. TRT-LLM's table times the same GEMMs lower: less of a rise, but a rise.
#   The share of GPU time priced from the tables: every GEMM of the decode steps, the bulk of a small
#   batch's step (attention reads little KV; the experts' grouped GEMMs stay on the roofline): 0.4 .. 0.8.
set -u
exe=$1 dir=$2
source "$(dirname "$0")/effect_checks.sh"

run roofline small-pd || exit 1
run sglang small-pd --set cluster.kernel_library=sglang || exit 1
run trtllm small-pd --set cluster.kernel_library=trtllm || exit 1
check "roofline: share priced from tables" "$(get roofline kernels.measured_share)" 0 0
check "sglang: share priced from tables" "$(get sglang kernels.measured_share)" 0.4 0.8
rise_sglang=$(python3 -c "print($(get sglang latency_ms.tpot.p50) - $(get roofline latency_ms.tpot.p50))")
rise_trtllm=$(python3 -c "print($(get trtllm latency_ms.tpot.p50) - $(get roofline latency_ms.tpot.p50))")
check "sglang: TPOT p50 rise (ms)" "$rise_sglang" 5.5 9
check "trtllm: TPOT p50 rise (ms), below sglang's" "$rise_trtllm" 0.5 "$rise_sglang"
exit $fail
