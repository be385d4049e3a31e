#!/usr/bin/env python3
"""Copies measured MLA decode attention times of ../shared/calibration/measured into fakegpu/profiles/measured/.

Usage: import_mla_decode_table.py MEASURED_DIR SYSTEM LIBRARY OUT_FILE
  e.g. import_mla_decode_table.py ../shared/calibration/measured gb300 sglang fakegpu/profiles/measured/gb300/mla_decode_sglang.csv

Keeps the kernel-only generation rows (SGLang: table generation_mla, the trtllm_mla kernel on Blackwell;
TensorRT-LLM: op mla_generation): one query per sequence, DeepSeek-V3's geometry (latent 512 + rope 64,
every local head reading the one latent KV head), the KV cache in bf16 or fp8. kv_len is the tokens each
query attends, step + 1 (the past KV and itself). The first row of each key is kept, as aiconfigurator
does; sorted by kv dtype, heads, batch, kv_len. Every latency is copied unchanged. Run at development time
only: the emulator never reads ../shared.
"""
import csv
import sys

from aic_table import write_table

KV_DTYPES = {"bfloat16": "bf16", "fp8": "fp8", "fp8_e4m3": "fp8"}


def generation(r, library):
    if library == "sglang":
        return r["table"] == "generation_mla"
    return r["op_name"] == "mla_generation"


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    measured, system, library, out = sys.argv[1:]
    rows = {}
    with open(f"{measured}/{system}_mla_{library}.csv", newline="") as f:
        for r in csv.DictReader(f):
            dtype = KV_DTYPES.get(r["kv_cache_dtype"])
            if dtype is None or not generation(r, library) or r["isl"] != "1":
                continue
            key = (dtype, int(r["num_heads"]), int(r["batch_size"]), int(r["step"]) + 1)
            rows.setdefault(key, r["latency_us"])
    write_table(
        out,
        f"Measured MLA decode attention latencies: {system}, {library} kernels (one row per KV dtype, local heads,\n"
        "# batch (sequences, one query each) and kv_len (keys each query attends); latency in microseconds).",
        f"{system}/mla/{library}/*/*generation*_perf.parquet",
        f"calibration/measured/{system}_mla_{library}.csv (latency ms -> us)",
        "only the kernel-only generation rows; kv_len = step + 1; dtypes renamed;\n"
        "#   the first row of each key kept; sorted; tools/calibration/import_mla_decode_table.py wrote this file.",
        ["kv_dtype", "heads", "batch", "kv_len", "latency_us"],
        [key + (latency,) for key, latency in sorted(rows.items())])

if __name__ == "__main__":
    main()
