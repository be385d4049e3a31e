"""What the importers of aiconfigurator's silicon tables share: the source and licence header every copied
table keeps, writing the sorted rows under it, and reading the attention-module rows."""
import csv

COMMIT = "095f58a51c4ca8e61b66ec108d86f223f8d559ce"
# aiconfigurator's gemm_type and kv_cache_dtype names, as the project's dtypes.
GEMM_DTYPES = {"bfloat16": "bf16", "fp8_block": "fp8", "nvfp4": "fp4"}
KV_DTYPES = {"bfloat16": "bf16", "fp8": "fp8", "fp8_e4m3": "fp8"}


def read_module_rows(path, keep, length):
    """The rows of an attention-module file of calibration/measured that `keep(row)` accepts, in the engine's
    dtypes, as {(gemm, kv, heads, batch, length(row)): latency_us}; the first row of each key kept, as
    aiconfigurator does."""
    rows = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if not keep(r):
                continue
            gemm, kv = GEMM_DTYPES.get(r["gemm_type"]), KV_DTYPES.get(r["kv_cache_dtype"])
            if gemm is None or kv is None:
                continue
            rows.setdefault((gemm, kv, int(r["num_heads"]), int(r["batch_size"]), length(r)), r["latency_us"])
    return rows


def read_dsa_module_rows(measured, system, library, op_name, keep, length):
    """The `op_name` rows of calibration/measured/SYSTEM_sparse_attention_LIBRARY.csv that `keep(row)` accepts,
    as read_module_rows gives them."""
    return read_module_rows(f"{measured}/{system}_sparse_attention_{library}.csv",
                            lambda r: r["op_name"] == op_name and keep(r), length)


def write_table(out, title, source_path, curated, modified, columns, rows):
    """Writes `rows` (tuples, in the order the table's loader expects) to `out` under a header naming the
    source and licence.

    title: the first comment line(s), what the table holds; source_path: the parquet path under
    aic-core/src/aiconfigurator_core/systems/data/; curated: the calibration/measured file(s) and the unit
    changes made there; modified: what the importer changed (Apache-2.0 s.4(b)).
    """
    with open(out, "w", newline="") as f:
        f.write(f"# {title}\n")
        f.write(f"# Source: ai-dynamo/aiconfigurator commit {COMMIT},\n")
        f.write(f"#   aic-core/src/aiconfigurator_core/systems/data/{source_path},\n")
        f.write(f"#   as curated in {curated}.\n")
        f.write("# SPDX-FileCopyrightText: Copyright (c) 2025-2026 NVIDIA CORPORATION & AFFILIATES. All rights reserved.\n")
        f.write("# SPDX-License-Identifier: Apache-2.0\n")
        f.write(f"# Modified (Apache-2.0 s.4(b)): {modified}\n")
        f.write(",".join(columns) + "\n")
        for row in rows:
            f.write(",".join(str(v) for v in row) + "\n")
    print(f"{out}: {len(rows)} rows")
