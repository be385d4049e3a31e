#!/usr/bin/env bash
# The shipped benchmark scenario (scenarios/bench/bench-small.json) end to end: nvl72emu run exits 0 with
# every check passing, the run drains, and report.json's `benchmark` holds what the closed loop implies:
# every measured request done with exactly its output tokens, the warm-up left out, and figures that follow
# from their definitions (scenarios/README.md, "Benchmark workloads").
set -u
exe=$1 scenario=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if ! "$exe" run "$scenario" --out "$out" --set outputs.trace=false --set outputs.html=false >"$out/stdout" 2>"$out/stderr"; then
  echo "FAIL: exited non-zero"; cat "$out/stdout" "$out/stderr"; exit 1
fi
python3 - "$out/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
b = r["benchmark"]
def need(ok, what):
    if not ok: sys.exit("FAIL: bench-small: %s" % what)
def near(a, e, what):
    need(abs(a - e) <= 1e-9 * max(1.0, abs(e)), "%s: %r, expected %r" % (what, a, e))
need(r["stop_reason"] == "quiescent", "did not drain (%s)" % r["stop_reason"])
need(r["requests"]["total"] == 64 + 8, "sent %d, expected 64 measured + 8 warm-up" % r["requests"]["total"])
need(b["requests"] == 64 and b["failed"] == 0 and b["warmup_requests"] == 8, "counts %s" % b)
need(b["concurrency"] == 8, "concurrency %s" % b["concurrency"])
need(b["output_tokens"] == 64 * 128 and b["input_tokens"] == 64 * 1024, "tokens %d in, %d out" % (b["input_tokens"], b["output_tokens"]))
for k in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"):
    d = b[k]
    need(0 < d["mean"] and 0 < d["median"] <= d["p90"] <= d["p99"], "%s %s" % (k, d))
need(b["itl_ms"]["count"] == 64 * 127, "one ITL per token after the first: %d" % b["itl_ms"]["count"])
# Equal output lengths and one token per step: the mean gap is the mean TPOT.
near(b["itl_ms"]["mean"], b["tpot_ms"]["mean"], "mean ITL vs mean TPOT")
near(b["request_throughput_per_s"], 64 / b["duration_s"], "req/s")
near(b["output_tokens_per_s"], 64 * 128 / b["duration_s"], "output tok/s")
near(b["output_tokens_per_s_per_gpu"] * r["gpus"], b["output_tokens_per_s"], "per GPU")
need(r["gpus"] == 8, "8 GPUs")
# 8 users at a time for 64 requests: the run lasts at least 8 requests' E2E back to back.
need(b["duration_s"] * 1e3 >= 64 / 8 * b["e2e_ms"]["mean"] * 0.999, "duration %s vs E2E %s" % (b["duration_s"], b["e2e_ms"]["mean"]))
print("ok: bench-small: TTFT mean %.1f ms, TPOT mean %.2f ms, ITL p99 %.2f ms, %.2f req/s, %.0f tok/s (%.0f per GPU, %.1f per user), %.2f s"
      % (b["ttft_ms"]["mean"], b["tpot_ms"]["mean"], b["itl_ms"]["p99"], b["request_throughput_per_s"], b["output_tokens_per_s"],
         b["output_tokens_per_s_per_gpu"], b["output_tokens_per_s_per_user"], b["duration_s"]))
PY
