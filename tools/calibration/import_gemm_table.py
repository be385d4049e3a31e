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

DTYPES = {"bfloat16": "bf16", "fp8_block": "fp8", "nvfp4": "fp4"}
HEADER = """# Measured GEMM latencies: {system}, {library} kernels (one row per dtype, m, n, k; latency in microseconds).
# Source: ai-dynamo/aiconfigurator commit 095f58a51c4ca8e61b66ec108d86f223f8d559ce,
#   aic-core/src/aiconfigurator_core/systems/data/{system}/gemm/{library}/*/gemm_perf.parquet,
#   as curated in calibration/measured/{system}_gemm_{library}.csv (latency ms -> us).
# SPDX-FileCopyrightText: Copyright (c) 2025-2026 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: Apache-2.0
# Modified (Apache-2.0 s.4(b)): only the bfloat16, fp8_block and nvfp4 rows, renamed bf16, fp8 and fp4; the first
#   row of each key kept; sorted; tools/calibration/import_gemm_table.py wrote this file.
"""


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
    with open(out, "w", newline="") as f:
        f.write(HEADER.format(system=system, library=library))
        f.write("dtype,m,n,k,latency_us\n")
        for (dtype, n, k, m), latency in sorted(rows.items()):
            f.write(f"{dtype},{m},{n},{k},{latency}\n")
    print(f"{out}: {len(rows)} rows")


if __name__ == "__main__":
    main()
