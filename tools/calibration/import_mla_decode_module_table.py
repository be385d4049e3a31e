#!/usr/bin/env python3
"""Copies measured MLA decode attention-module times of ../shared/calibration/measured into
fakegpu/profiles/measured/.

Usage: import_mla_decode_module_table.py MEASURED_DIR SYSTEM LIBRARY OUT_FILE
  e.g. import_mla_decode_module_table.py ../shared/calibration/measured gb200 sglang fakegpu/profiles/measured/gb200/mla_decode_module_sglang.csv

Keeps DeepSeek-V3's whole decode attention block on one rank, one query per sequence: the fused q_a/kv_a
GEMM, q_b, the absorbed BMMs, the latent attention, o_proj, with norms, RoPE and quantisation between.
TensorRT-LLM's mla_generation_module rows (collect_mla_module.py; projection GEMMs in bfloat16, fp8_block and
nvfp4; kv_len = step, the cache holding the new token) and SGLang's wideep_generation_mla rows
(collect_wideep_attn.py; fp8_block projections, fp8 KV; kv_len = isl + 1, isl cached tokens and the new one;
on Hopper the FA3 rows are kept, SGLang's default attention backend for DeepSeek there). Both collectors time
the block replayed from a CUDA graph, as a serving engine runs decode. By projection GEMM dtype (bfloat16 ->
bf16, fp8_block -> fp8, nvfp4 -> fp4), KV dtype, local heads, batch and kv_len. The first row of each key is
kept, as aiconfigurator does; sorted by gemm dtype, kv dtype, heads, batch, kv_len; every latency copied
unchanged. Run at development time only: the emulator never reads ../shared.
"""
import sys

from aic_table import read_module_rows, write_table

MODULE = {
    "trtllm": ("op_name", "mla_generation_module", lambda r: r["isl"] == "1", lambda r: int(r["step"])),
    "sglang": ("table", "wideep_generation_mla", lambda r: r["step"] == "0", lambda r: int(r["isl"]) + 1),
}


def main():
    if len(sys.argv) != 5 or sys.argv[3] not in MODULE:
        sys.exit(__doc__)
    measured, system, library, out = sys.argv[1:]
    column, name, one_query, kv_len = MODULE[library]
    rows = read_module_rows(
        f"{measured}/{system}_mla_{library}.csv",
        lambda r: r[column] == name and one_query(r) and r.get("kernel_source") != "flashinfer",
        kv_len)
    write_table(
        out,
        f"Measured MLA decode attention-module latencies: {system}, {library} kernels, DeepSeek-V3's geometry (one\n"
        "# row per projection GEMM dtype, KV dtype, local heads, batch (sequences, one query each) and kv_len (the\n"
        "# sequence's cached tokens, the new one included); latency in microseconds).",
        f"{system}/mla/{library}/*/{name}_perf.parquet",
        f"calibration/measured/{system}_mla_{library}.csv (latency ms -> us)",
        f"only the {name} rows of one query per sequence; kv_len from step or isl as the\n"
        "#   importer's docstring says; dtypes renamed; the first row of each key kept; sorted;\n"
        "#   tools/calibration/import_mla_decode_module_table.py wrote this file.",
        ["gemm_dtype", "kv_dtype", "heads", "batch", "kv_len", "latency_us"],
        [key + (latency,) for key, latency in sorted(rows.items())])


if __name__ == "__main__":
    main()
