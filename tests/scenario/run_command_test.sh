#!/usr/bin/env bash
# nvl72emu run on the CI scenario: exit 0, report.json with every documented key; bad input exits 2.
set -u
exe=$1 scenario=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0
if ! "$exe" run "$scenario" --out "$out" >"$out/stdout" 2>&1; then
  echo "FAIL: run exited non-zero"; cat "$out/stdout"; exit 1
fi
grep -q "TTFT" "$out/stdout" || { echo "FAIL: no summary table"; cat "$out/stdout"; fail=1; }
python3 - "$out/report.json" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))
want = ["schema_version", "scenario", "seed", "event_log_hash", "sim_time_s", "wall_time_s", "speedup",
        "peak_rss_bytes", "requests", "latency_ms", "throughput", "routing", "kv"]
missing = [k for k in want if k not in r]
missing += ["requests." + k for k in ["total", "completed", "failed", "failed_by_reason"] if k not in r["requests"]]
for m in ["ttft", "tpot", "e2e"]:
    missing += ["latency_ms.%s.%s" % (m, k) for k in ["mean", "p50", "p90", "p99"] if k not in r["latency_ms"][m]]
missing += ["throughput." + k for k in ["input_tokens_per_s", "output_tokens_per_s"] if k not in r["throughput"]]
if "transfer_bytes" not in r["kv"]: missing.append("kv.transfer_bytes")
if missing: sys.exit("FAIL: report.json lacks " + ", ".join(missing))
if r["requests"]["completed"] != r["requests"]["total"] or r["requests"]["total"] == 0:
    sys.exit("FAIL: not every request completed: %s" % r["requests"])
print("ok: report.json has every key")
PY
msg=$("$exe" run "$scenario" --set deployment.normal_gpus=100 2>&1); rc=$?
if [ "$rc" -ne 2 ] || ! grep -q "deployment.normal_gpus" <<<"$msg"; then
  echo "FAIL: an impossible deployment: rc=$rc"; echo "$msg"; fail=1
else
  echo "ok: an impossible deployment exits 2"
fi
msg=$("$exe" run "$scenario" --set model.profile=glm-5 --set deployment.normal_gpus=1 --set deployment.prefill_gpus=0 2>&1); rc=$?
if [ "$rc" -ne 2 ] || ! grep -q "deployment: does not fit" <<<"$msg"; then
  echo "FAIL: a model that does not fit: rc=$rc"; echo "$msg"; fail=1
else
  echo "ok: a model that does not fit exits 2"
fi
msg=$("$exe" run /no/such/scenario.json 2>&1); rc=$?
[ "$rc" -eq 2 ] && echo "ok: a missing scenario exits 2" || { echo "FAIL: missing scenario rc=$rc: $msg"; fail=1; }
exit $fail
