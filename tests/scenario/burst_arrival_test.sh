#!/usr/bin/env bash
# A burst of long prompts at the TP8 prefill worker (workload.burst), seed 1: 16 prompts of 32K uncached
# tokens (DeepSeek-V3, FP8) within 2 s, against the same 16 spread by a Poisson process at 0.05/s (20 s apart
# on average: each finds the worker idle).
#   Hand estimate. Alone a prompt's TTFT is t1 (the no-burst run's mean; ~0.5 s). In the burst the worker is
#   busy from the first arrival on (16 x t1 ~ 8 s >> 2 s) and serves them in turn: the k-th done at about
#   k x t1, arriving at about (k - 0.5) x 2 s / 16. Mean TTFT ~ t1 x (16 + 1) / 2 - 1 s; the longest ~
#   16 x t1 - 1.9 s; the prefill queue peaks near 16 - 1 - (prompts done by the first sample at 1 s).
set -u
exe=$1 dir=$2
source "$(dirname "$0")/effect_checks.sh"

run burst long-prompt-burst || exit 1
run spread long-prompt-burst --set workload.burst.sessions=0 || exit 1
t1=$(python3 -c "print($(get spread latency_ms.ttft.mean) / 1000)")
check "spread: TTFT p99 / mean (each alone)" "$(ratio "$(get spread latency_ms.ttft.p99)" "$(get spread latency_ms.ttft.mean)")" 0.95 1.05
mean_estimate=$(python3 -c "print($t1 * 17 / 2 - 1)")
check "burst: mean TTFT / hand estimate" "$(ratio "$(python3 -c "print($(get burst latency_ms.ttft.mean) / 1000)")" "$mean_estimate")" 0.85 1.15
check "burst: TTFT p99 / hand estimate of the longest" \
  "$(ratio "$(python3 -c "print($(get burst latency_ms.ttft.p99) / 1000)")" "$(python3 -c "print(16 * $t1 - 1.9)")")" 0.85 1.15
check "burst: prefill queue peak" "$(python3 -c "import json; print(max(json.load(open('$out/burst/report.json'))['timeline']['series']['pools']['prefill']['waiting']))")" 10 15
check "spread: prefill queue peak" "$(python3 -c "import json; print(max(json.load(open('$out/spread/report.json'))['timeline']['series']['pools']['prefill']['waiting']))")" 0 1
exit $fail
