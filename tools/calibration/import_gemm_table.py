#!/usr/bin/env python3
"""Copies a measured GEMM table of ../shared/calibration/measured into fakegpu/profiles/measured/.

Usage: import_gemm_table.py MEASURED_DIR SYSTEM LIBRARY OUT_FILE
  e.g. import_gemm_table.py ../shared/calibration/measured gb300 sglang fakegpu/profiles/measured/gb300/gemm_sglang.csv

Keeps the GEMM dtypes the engine launches (bfloat16 -> bf16, fp8_block -> fp8: the engine's FP8 weights are
128x128 block-scaled as DeepGEMM runs them, nvfp4 -> fp4), the first row of each key as aiconfigurator does,
sorted by dtype, n, k, m. Every latency is copied unchanged. Run at development time only: the emulator
never reads ../shared.
"""
import csv
import sys

from aic_table import write_table

DTYPES = {"bfloat16": "bf16", "fp8_block": "fp8", "nvfp4": "fp4"}


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    measured, system, library, out = sys.argv[1:]
    rows = {}
    with open(f"{measured}/{system}_gemm_{library}.csv", newline="") as f:
        for r in csv.DictReader(f):
            dtype = DTYPES.get(r["gemm_dtype"])
            if dtype is None:
                continue
            key = (dtype, int(r["n"]), int(r["k"]), int(r["m"]))
            rows.setdefault(key, r["latency_us"])
    write_table(
        out,
        f"Measured GEMM latencies: {system}, {library} kernels (one row per dtype, m, n, k; latency in microseconds).",
        f"{system}/gemm/{library}/*/gemm_perf.parquet",
        f"calibration/measured/{system}_gemm_{library}.csv (latency ms -> us)",
        "only the bfloat16, fp8_block and nvfp4 rows, renamed bf16, fp8 and fp4; the first\n"
        "#   row of each key kept; sorted; tools/calibration/import_gemm_table.py wrote this file.",
        ["dtype", "m", "n", "k", "latency_us"],
        [(dtype, m, n, k, latency) for (dtype, n, k, m), latency in sorted(rows.items())])

if __name__ == "__main__":
    main()
