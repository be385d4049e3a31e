#!/usr/bin/env python3
"""Copies measured fused-MoE times of ../shared/calibration/measured into fakegpu/profiles/measured/.

Usage: import_moe_table.py MEASURED_DIR SYSTEM LIBRARY OUT_FILE [--deepep generation|context]
  e.g. import_moe_table.py ../shared/calibration/measured b200_sxm sglang fakegpu/profiles/measured/b200/moe_sglang.csv

With --deepep PHASE it copies SGLang's wide-EP expert compute instead (SYSTEM_moe_wideep_sglang.csv, op
moe_generation: the experts behind DeepEP's low-latency dispatch, as SGLang runs decode batches; moe_context:
behind the normal dispatch, as it runs prefill batches): uniform routing (its balanced case), fp8_block rows,
in the same columns; `tokens` is the EP group's tokens (num_tokens; aiconfigurator's collector routes them
over the whole group and times rank 0's share, tokens x top-k / EP expert rows under uniform routing: at EP32
the times grow linearly past ~16K tokens as that share's FLOPs do, which a per-rank count would not).

Keeps the rows of balanced routing (the tables' other routings are synthetic power laws; the engine's own
routing decides which experts a step reads) in the expert dtypes the engine launches (bfloat16 -> bf16,
fp8_block -> fp8: the engine's FP8 weights are 128x128 block-scaled, nvfp4 -> fp4). TensorRT-LLM's per-tensor
fp8 rows are dropped for that reason. Where TensorRT-LLM was measured with two NVFP4 kernels (GB200 and B200:
CUTLASS and the TRTLLM-gen min-latency one) the faster at each point is kept: a deployment configures the
MoE backend for its regime (NVIDIA's low-latency DeepSeek-R1 NVFP4 recipes run TRTLLM-gen, up to 2x faster
than CUTLASS at EP8 below a few hundred tokens; CUTLASS wins at thousands). One row per expert dtype, hidden,
unsharded expert intermediate size, top-k, routed experts, MoE TP, MoE EP and tokens (those entering the op
on each GPU, which computes its experts' share of them: tokens x top-k / EP expert rows); of repeated
measurements the first kept, as aiconfigurator does; sorted in that column order. Every latency kept is
copied unchanged. Run at development time only: the emulator never reads ../shared.
"""
import csv
import sys

from aic_table import write_table

DTYPES = {"bfloat16": "bf16", "fp8_block": "fp8", "nvfp4": "fp4"}


def main():
    if len(sys.argv) == 7 and sys.argv[5] == "--deepep" and sys.argv[6] in ("generation", "context"):
        return import_deepep(*sys.argv[1:5], sys.argv[6])
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    measured, system, library, out = sys.argv[1:]
    by_kernel = {}
    with open(f"{measured}/{system}_moe_{library}.csv", newline="") as f:
        for r in csv.DictReader(f):
            dtype = DTYPES.get(r["moe_dtype"])
            if dtype is None or r["distribution"] != "balanced":
                continue
            key = (dtype,) + tuple(int(r[c]) for c in ("hidden_size", "inter_size", "topk", "num_experts",
                                                         "moe_tp_size", "moe_ep_size", "num_tokens"))
            by_kernel.setdefault((key, r.get("kernel_source")), r["latency_us"])
    rows = {}
    for (key, _), latency in by_kernel.items():
        if key not in rows or float(latency) < float(rows[key]):
            rows[key] = latency
    kernels = {k for _, k in by_kernel}
    print(f"{system} {library}: kernels {sorted(k or '-' for k in kernels)}")
    write_table(
        out,
        f"Measured fused-MoE latencies: {system}, {library} kernels, balanced routing (one row per expert dtype,\n"
        "# hidden, unsharded expert intermediate size, top-k, routed experts, MoE TP, MoE EP and tokens entering the\n"
        "# op over the EP group; routing, permute, the expert GEMMs, activation and finalize on one rank, no\n"
        "# all-to-all; latency in microseconds).",
        f"{system}/moe/{library}/*/moe_perf.parquet",
        f"calibration/measured/{system}_moe_{library}.csv (latency ms -> us)",
        "only balanced routing and the bfloat16, fp8_block and nvfp4 rows, renamed bf16, fp8 and\n"
        "#   fp4; the first row of each key and kernel kept, and of two kernels the faster; sorted;\n"
        "#   tools/calibration/import_moe_table.py wrote this file.",
        ["dtype", "hidden", "inter", "topk", "experts", "moe_tp", "moe_ep", "tokens", "latency_us"],
        [key + (latency,) for key, latency in sorted(rows.items())])


def import_deepep(measured, system, library, out, phase):
    rows = {}
    with open(f"{measured}/{system}_moe_wideep_{library}.csv", newline="") as f:
        for r in csv.DictReader(f):
            dtype = DTYPES.get(r["moe_dtype"])
            if dtype is None or r["op_name"] != f"moe_{phase}" or r["distribution"] != "uniform":
                continue
            key = (dtype,) + tuple(int(r[c]) for c in ("hidden_size", "inter_size", "topk", "num_experts",
                                                         "moe_tp_size", "moe_ep_size", "num_tokens"))
            rows.setdefault(key, r["latency_us"])
    dispatch = {"generation": "low-latency", "context": "normal"}[phase]
    write_table(
        out,
        f"Measured wide-EP expert compute: {system}, {library} kernels behind DeepEP's {dispatch} dispatch\n"
        "# (one row per expert dtype, hidden, unsharded expert intermediate size, top-k, routed experts, MoE TP,\n"
        "# MoE EP and the EP group's tokens; one rank's experts on its share under uniform routing, no\n"
        "# all-to-all; latency in microseconds).",
        f"{system}/moe/{library}/0.5.10/wideep_{phase}_moe_perf.parquet",
        f"calibration/measured/{system}_moe_wideep_{library}.csv (latency ms -> us)",
        f"only the moe_{phase} rows of uniform routing in fp8_block, renamed fp8; the first row of\n"
        "#   each key kept; sorted; tools/calibration/import_moe_table.py --deepep wrote this file.",
        ["dtype", "hidden", "inter", "topk", "experts", "moe_tp", "moe_ep", "tokens", "latency_us"],
        [key + (latency,) for key, latency in sorted(rows.items())])


if __name__ == "__main__":
    main()
