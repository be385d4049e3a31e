#!/usr/bin/env python3
"""Copies measured DSA prefill (context) attention-module times of ../shared/calibration/measured into
fakegpu/profiles/measured/.

Usage: import_dsa_context_table.py MEASURED_DIR SYSTEM LIBRARY OUT_FILE
  e.g. import_dsa_context_table.py ../shared/calibration/measured b200_sxm sglang fakegpu/profiles/measured/b200/dsa_context_sglang.csv

Keeps the dsa_context_module rows with step 0 (no cached prefix): GLM-5's whole prefill attention block on one
rank (the fused q_a/kv_a GEMM, q_b, the indexer's projections, scoring and top-k, the attention, o_proj; not
the input norm), by projection GEMM dtype (bfloat16 -> bf16, fp8_block -> fp8, nvfp4 -> fp4), KV dtype, local
heads, batch (sequences) and isl (each sequence's new tokens). SGLang's rows name the kernel that ran: dense
ragged MHA up to 2,048 tokens (where every key is in the top-k) and the indexer with sparse attention above,
one sparse kernel per GPU and KV dtype (TensorRT-LLM's on Blackwell, FlashMLA on Hopper), so each key has
one kernel and none is chosen between. The first row of each key is kept, as aiconfigurator does; sorted by
gemm dtype, kv dtype, heads, batch, isl; every latency copied unchanged.
Run at development time only: the emulator never reads ../shared.
"""
import sys

from aic_table import read_dsa_module_rows, write_table


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    measured, system, library, out = sys.argv[1:]
    rows = read_dsa_module_rows(measured, system, library, "dsa_context_module", lambda r: r["step"] == "0",
                                lambda r: int(r["isl"]))
    write_table(
        out,
        f"Measured DSA prefill attention-module latencies: {system}, {library} kernels, GLM-5's geometry (one row per\n"
        "# projection GEMM dtype, KV dtype, local heads, batch (sequences) and isl (each sequence's new tokens, no\n"
        "# cached prefix); latency in microseconds).",
        f"{system}/sparse_attention/{library}/*/dsa_context_module_perf.parquet",
        f"calibration/measured/{system}_sparse_attention_{library}.csv (latency ms -> us)",
        "only the dsa_context_module rows of step 0; dtypes renamed; the first row of each key\n"
        "#   kept; sorted; tools/calibration/import_dsa_context_table.py wrote this file.",
        ["gemm_dtype", "kv_dtype", "heads", "batch", "isl", "latency_us"],
        [key + (latency,) for key, latency in sorted(rows.items())])


if __name__ == "__main__":
    main()
