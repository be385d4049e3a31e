#!/usr/bin/env python3
"""Copies measured nccl-tests times of ../shared/calibration/measured into fabric/profiles/measured/.

Usage: import_nccl_table.py [--custom-allreduce LIBRARY] MEASURED_DIR OUT_FILE SYSTEM:GPUS[,GPUS...] [SYSTEM:GPUS...]
  e.g. import_nccl_table.py ../shared/calibration/measured fabric/profiles/measured/gb300-nvl72/nccl.csv \
           gb300:2,4 b300_sxm:8
       import_nccl_table.py --custom-allreduce sglang ../shared/calibration/measured \
           fabric/profiles/measured/gb300-nvl72/all_reduce_sglang.csv gb300:2,4 b300_sxm:8

Keeps the half-precision rows (the engine's bf16 activations) of all_reduce, all_gather and reduce_scatter
for the GPU counts named per system, sorted by op, GPUs, bytes; every latency is copied unchanged. With
--custom-allreduce, the all-reduce a kernel library runs itself instead (SGLang's custom all-reduce as captured
in a CUDA graph, TensorRT-LLM's AllReduce op with its own choice of algorithm), in the same columns. Where a
later system fills GPU counts the first lacks (8 GPUs of an HGX B300 beside a GB300 tray's 2 and 4), the
two are compared at the counts both measured and the agreement printed, the argument for using one beside
the other. Run at development time only: the emulator never reads ../shared.
"""
import csv
import statistics
import sys

from aic_table import write_table

OPS = ("all_reduce", "all_gather", "reduce_scatter")


def read(measured, system, library):
    rows = {}
    if library:
        with open(f"{measured}/{system}_custom_allreduce_{library}.csv", newline="") as f:
            for r in csv.DictReader(f):
                if r.get("implementation", "trtllm") in ("sglang_graph", "trtllm"):
                    rows.setdefault(("all_reduce", int(r["num_gpus"]), int(r["message_size_bytes"])), r["latency_us"])
        return rows
    with open(f"{measured}/{system}_comm_nccl.csv", newline="") as f:
        for r in csv.DictReader(f):
            if r["op_name"] in OPS and r["nccl_dtype"] == "half":
                rows.setdefault((r["op_name"], int(r["num_gpus"]), int(r["message_size_bytes"])), r["latency_us"])
    return rows


def main():
    args = sys.argv[1:]
    library = None
    if args[:1] == ["--custom-allreduce"]:
        library, args = args[1], args[2:]
        if library not in ("sglang", "trtllm"):
            sys.exit(f"--custom-allreduce: '{library}' is not sglang or trtllm")
    if len(args) < 3:
        sys.exit(__doc__)
    measured, out, picks = args[0], args[1], args[2:]
    kept = {}
    first = None
    for pick in picks:
        system, counts = pick.split(":")
        counts = {int(c) for c in counts.split(",")}
        rows = read(measured, system, library)
        if first is None:
            first = rows
        else:
            ratios = [float(v) / float(first[k]) - 1 for k, v in rows.items() if k in first]
            if ratios:
                errors = sorted(abs(r) for r in ratios)
                print(f"{system} against {picks[0]} where both measured: {len(ratios)} rows, "
                      f"median |diff| {100 * statistics.median(errors):.1f}%, "
                      f"p90 {100 * errors[int(0.9 * (len(errors) - 1))]:.1f}%, "
                      f"mean {100 * statistics.mean(ratios):+.1f}%")
        for (op, gpus, size), latency in rows.items():
            if gpus in counts:
                kept.setdefault((op, gpus, size), (latency, system))
    if library:
        what = ("SGLang's custom all-reduce, captured in a CUDA graph (sglang 0.5.14)" if library == "sglang" else
                "TensorRT-LLM's AllReduce op, its own algorithm choice (1.3.0rc20)")
        write_table(
            out,
            f"Measured all-reduce times of {what}, bf16:\n"
            "# one row per GPU count and message size in bytes, latency in microseconds; measured_on names the\n"
            "# system each row comes from.",
            f"<system>/comm/{library}/*/custom_allreduce_perf.parquet",
            f"calibration/measured/<system>_custom_allreduce_{library}.csv (latency ms -> us, elements -> bytes)",
            f"only the {'sglang_graph ' if library == 'sglang' else ''}rows; GPU counts {' '.join(picks)};\n"
            "#   tools/calibration/import_nccl_table.py wrote this file.",
            ["op", "gpus", "bytes", "latency_us", "measured_on"],
            [key + value for key, value in sorted(kept.items())])
        return
    write_table(
        out,
        "Measured nccl-tests times (out-of-place, half precision): one row per op, GPU count and message size\n"
        "# (nccl-tests' size in bytes), latency in microseconds; measured_on names the system each row comes from.",
        "<system>/comm/nccl/2.29.2/nccl_perf.parquet",
        "calibration/measured/<system>_comm_nccl.csv (latency ms -> us, elements -> bytes)",
        f"only half rows of {', '.join(OPS)}; GPU counts {' '.join(picks)};\n"
        "#   tools/calibration/import_nccl_table.py wrote this file.",
        ["op", "gpus", "bytes", "latency_us", "measured_on"],
        [key + value for key, value in sorted(kept.items())])


if __name__ == "__main__":
    main()
