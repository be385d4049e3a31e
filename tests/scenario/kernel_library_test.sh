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
#   roofline, ~+0.6 ms. The LM head (BF16, 1.85 GB) is memory-bound in both: ~+6.7 ms so far.
#   Under SGLang the attention block (q_a/kv_a to o, the MLA decode and the absorbed BMMs between) is
#   priced whole from its decode module table instead: 110-118 us at 1-3 sequences of up to ~2K keys,
#   against ~108 us for its kernels above (~18 + 33.7 + 37.8 + 12 + two ~3 us BMMs), ~+0.3 ms over 61.
#   Under SGLang the routed experts behind DeepEP's low-latency dispatch come from its wide-EP table too,
#   EP8 read between the measured EP4 and EP16 (geometric mean). At 2 requests a GPU the group's 16 tokens
#   give a rank 16 pairs: EP4 273.8 us and EP16 86.5 us at 16 tokens, 153.9 us, against the roofline's
#   ~12.7 experts' weights (560 MB at 6.4 TB/s, 88 us): +66 us a MoE layer, +3.8 ms over 58; at 1 and 3
#   requests +72 and +88 us, +4.2 and +5.1 ms. So TPOT p50 rises by ~10.8-12.1 ms: 9 .. 14.5 ms accepted
#   (the pool mixes prefill chunks into some steps, whose experts take DeepEP's normal-mode table, ~0.5 ms a
#   layer). TRT-LLM has no wide-EP table here (its experts stay on the roofline) and times the GEMMs lower:
#   less of a rise, but a rise.
#   The share of GPU time priced from the tables: under SGLang every GEMM, the MLA decode attention blocks,
#   the experts and the prefill pool's MLA blocks: all of a step but its norms, activations and sampler,
#   0.9 .. 1.
#   By kind (kernels.by_kind): under SGLang the GEMMs, the experts and the decode attention all from tables,
#   the norms and activations (elementwise), the sampler and the graph launches' own overhead all from the
#   roofline; under TensorRT-LLM the decode pool's experts behind DeepEP from the roofline, so most of the
#   moe_gemm time (the prefill pool's fused MoE has a table). The kinds add up to the whole.
set -u
exe=$1 dir=$2
source "$(dirname "$0")/effect_checks.sh"

run roofline small-pd || exit 1
run sglang small-pd --set cluster.kernel_library=sglang || exit 1
run trtllm small-pd --set cluster.kernel_library=trtllm || exit 1
check "roofline: share priced from tables" "$(get roofline kernels.measured_share)" 0 0
check "sglang: share priced from tables" "$(get sglang kernels.measured_share)" 0.9 1
share() { ratio "$(get "$1" "kernels.by_kind.$2.measured_gpu_s")" "$(get "$1" "kernels.by_kind.$2.gpu_s")"; }
for kind in gemm moe_gemm attn_decode; do check "sglang: $kind share priced from tables" "$(share sglang $kind)" 0.999 1; done
for kind in elementwise sampler graph_launch; do check "sglang: $kind share priced from tables" "$(share sglang $kind)" 0 0; done
check "trtllm: moe_gemm share priced from tables" "$(share trtllm moe_gemm)" 0 0.5
kinds_sum=$(python3 -c 'import json,sys
k=json.load(open(sys.argv[1]))["kernels"]
print(sum(v["gpu_s"] for v in k["by_kind"].values()) / k["gpu_s"])' "$out/sglang/report.json")
check "sglang: the kinds' GPU time over the whole" "$kinds_sum" 0.999999 1.000001
rise_sglang=$(python3 -c "print($(get sglang latency_ms.tpot.p50) - $(get roofline latency_ms.tpot.p50))")
rise_trtllm=$(python3 -c "print($(get trtllm latency_ms.tpot.p50) - $(get roofline latency_ms.tpot.p50))")
check "sglang: TPOT p50 rise (ms)" "$rise_sglang" 9 14.5
check "trtllm: TPOT p50 rise (ms), below sglang's" "$rise_trtllm" 0.5 "$rise_sglang"
exit $fail
