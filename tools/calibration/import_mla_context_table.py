#!/usr/bin/env python3
"""Copies measured MLA prefill (context) attention-module times of ../shared/calibration/measured into
fakegpu/profiles/measured/.

Usage: import_mla_context_table.py MEASURED_DIR SYSTEM LIBRARY OUT_FILE
  e.g. import_mla_context_table.py ../shared/calibration/measured gb200 trtllm fakegpu/profiles/measured/gb200/mla_context_trtllm.csv

Keeps DeepSeek-V3's whole prefill attention block on one rank with no cached prefix (step 0): the fused
q_a/kv_a GEMM, q_b, kv_b, the MHA-form attention, o_proj, with norms and RoPE between; TensorRT-LLM's
mla_context_module rows (collect_mla_module.py; projection GEMMs in bfloat16, fp8_block and nvfp4) and SGLang's
wideep_context_mla rows (fp8_block projections, fp8 KV; on Hopper both FlashInfer and FA3 were measured, and
the FA3 rows are kept: SGLang's default attention backend for DeepSeek on Hopper). By projection GEMM dtype (bfloat16 -> bf16, fp8_block -> fp8, nvfp4 -> fp4), KV dtype, local
heads, batch (sequences) and isl (each sequence's new tokens). The first row of each key is kept, as
aiconfigurator does; sorted by gemm dtype, kv dtype, heads, batch, isl; every latency copied unchanged.
Run at development time only: the emulator never reads ../shared.
"""
import sys

from aic_table import read_module_rows, write_table

MODULE = {"trtllm": ("op_name", "mla_context_module"), "sglang": ("table", "wideep_context_mla")}


def main():
    if len(sys.argv) != 5 or sys.argv[3] not in MODULE:
        sys.exit(__doc__)
    measured, system, library, out = sys.argv[1:]
    column, name = MODULE[library]
    rows = read_module_rows(
        f"{measured}/{system}_mla_{library}.csv",
        lambda r: r[column] == name and r["step"] == "0" and r.get("kernel_source") != "flashinfer",
        lambda r: int(r["isl"]))
    write_table(
        out,
        f"Measured MLA prefill attention-module latencies: {system}, {library} kernels, DeepSeek-V3's geometry (one\n"
        "# row per projection GEMM dtype, KV dtype, local heads, batch (sequences) and isl (each sequence's new\n"
        "# tokens, no cached prefix); latency in microseconds).",
        f"{system}/mla/{library}/*/{name}_perf.parquet",
        f"calibration/measured/{system}_mla_{library}.csv (latency ms -> us)",
        f"only the {name} rows of step 0; dtypes renamed; the first row of each key kept;\n"
        "#   sorted; tools/calibration/import_mla_context_table.py wrote this file.",
        ["gemm_dtype", "kv_dtype", "heads", "batch", "isl", "latency_us"],
        [key + (latency,) for key, latency in sorted(rows.items())])


if __name__ == "__main__":
    main()
