#!/usr/bin/env python3
"""Copies measured DSA decode attention-module times of ../shared/calibration/measured into fakegpu/profiles/measured/.

Usage: import_dsa_decode_table.py MEASURED_DIR SYSTEM LIBRARY OUT_FILE
  e.g. import_dsa_decode_table.py ../shared/calibration/measured b200_sxm sglang fakegpu/profiles/measured/b200/dsa_decode_sglang.csv

Keeps the dsa_generation_module rows: GLM-5's whole decode attention block on one rank (the fused q_a/kv_a
GEMM, q_b, the indexer's projections, scoring and top-k, sparse MLA over the top-k keys, the absorbed BMMs
and o_proj; not the input norm) with one query per sequence, by projection GEMM dtype (bfloat16 -> bf16,
fp8_block -> fp8, nvfp4 -> fp4), KV dtype, local heads, batch and kv_len = step + 1 (the past KV and the new
token). SGLang runs one kernel per KV dtype on each GPU (its kernel_source), so no row is chosen between
kernels. The first row of each key is kept, as aiconfigurator does; sorted by gemm dtype, kv dtype, heads,
batch, kv_len. Every latency kept is copied unchanged. Two kinds of rows are dropped, and counted:
  - spikes: a point over 1.25x both its neighbours along its batch's kv_len curve. TensorRT-LLM's rows at
    step 2048 (kv_len 2049, where the top-k first has keys to drop) are 1.3-3x the steps either side at every
    batch, and above the step 4096 beyond them: no steady kernel slows down and speeds up again with more
    keys, and a sequence passes that step once, but read linearly the spike would raise every kv_len
    from 1025 to 4097;
  - cliffs: a batch whose every point is over 3x the next smaller batch's at the same kv_len. SGLang's batch
    1024 (and 512 on Hopper) is 10-20x batch 512 (256) at every length, with nothing leading up to it in the
    smaller batches; without it a larger batch keeps the largest measured batch's utilisation.
Run at development time only: the emulator never reads ../shared.
"""
import sys

from aic_table import read_dsa_module_rows, write_table

SPIKE = 1.25
CLIFF = 3.0


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    measured, system, library, out = sys.argv[1:]
    rows = read_dsa_module_rows(measured, system, library, "dsa_generation_module", lambda r: r["isl"] == "1",
                                lambda r: int(r["step"]) + 1)
    curves = {}
    for (gemm, kv, heads, batch, kv_len), latency in sorted(rows.items()):
        curves.setdefault((gemm, kv, heads), {}).setdefault(batch, []).append((kv_len, float(latency)))
    spikes = cliffs = 0
    for slice_key, batches in curves.items():
        for batch, points in batches.items():
            spiked = {points[i][0] for i in range(1, len(points) - 1)
                      if points[i][1] > SPIKE * max(points[i - 1][1], points[i + 1][1])}
            for kv_len in spiked:
                del rows[slice_key + (batch, kv_len)]
            spikes += len(spiked)
            batches[batch] = [p for p in points if p[0] not in spiked]
        kept = None
        for batch in sorted(batches):
            below = dict(batches[kept]) if kept is not None else {}
            common = [(t, below[n]) for n, t in batches[batch] if n in below]
            if common and all(t > CLIFF * b for t, b in common):
                for kv_len, _ in batches[batch]:
                    del rows[slice_key + (batch, kv_len)]
                cliffs += 1
            else:
                kept = batch
    print(f"{system} {library}: dropped {spikes} spike points and {cliffs} cliff batches")
    write_table(
        out,
        f"Measured DSA decode attention-module latencies: {system}, {library} kernels, GLM-5's geometry (one row per\n"
        "# projection GEMM dtype, KV dtype, local heads, batch (sequences, one query each) and kv_len (the sequence's\n"
        "# cached tokens, the new one included); latency in microseconds).",
        f"{system}/sparse_attention/{library}/*/dsa_generation_module_perf.parquet",
        f"calibration/measured/{system}_sparse_attention_{library}.csv (latency ms -> us)",
        "only the dsa_generation_module rows; kv_len = step + 1; dtypes renamed; spikes\n"
        "#   (over 1.25x both neighbours in kv_len) and cliff batches (over 3x the smaller batch at every kv_len) dropped;\n"
        "#   the first row of each key kept; sorted; tools/calibration/import_dsa_decode_table.py wrote this file.",
        ["gemm_dtype", "kv_dtype", "heads", "batch", "kv_len", "latency_us"],
        [key + (latency,) for key, latency in sorted(rows.items())])


if __name__ == "__main__":
    main()
