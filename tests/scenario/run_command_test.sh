#!/usr/bin/env bash
# nvl72emu run on the CI scenario: exit 0, report.json with every documented key, a trace Perfetto can
# open and a self-contained report.html; a failed check exits 1 naming it; bad input exits 2.
set -u
exe=$1 scenario=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0
if ! "$exe" run "$scenario" --out "$out" >"$out/stdout" 2>"$out/stderr"; then
  echo "FAIL: run exited non-zero"; cat "$out/stdout" "$out/stderr"; exit 1
fi
grep -q "TTFT" "$out/stdout" || { echo "FAIL: no summary table"; cat "$out/stdout"; fail=1; }
grep -q "GPU-s per wall-s  peak RSS" "$out/stdout" || { echo "FAIL: no speed figures"; cat "$out/stdout"; fail=1; }
if grep -q $'\r' "$out/stderr"; then echo "FAIL: a progress bar although stderr is not a terminal"; fail=1; fi
python3 - "$out" <<'PY' || fail=1
import json, sys, os
out = sys.argv[1]
r = json.load(open(os.path.join(out, "report.json")))
want = ["schema_version", "scenario", "seed", "event_log_hash", "sim_time_s", "wall_time_s", "speedup",
        "gpu_seconds_per_wall_second", "peak_rss_bytes", "requests", "latency_ms", "throughput", "routing", "kv",
        "links", "checks", "trace"]
missing = [k for k in want if k not in r]
missing += ["requests." + k for k in ["total", "completed", "failed", "failed_by_reason"] if k not in r["requests"]]
for m in ["ttft", "tpot", "e2e"]:
    missing += ["latency_ms.%s.%s" % (m, k) for k in ["mean", "p50", "p90", "p99"] if k not in r["latency_ms"][m]]
missing += ["throughput." + k for k in ["input_tokens_per_s", "output_tokens_per_s", "per_gpu"] if k not in r["throughput"]]
missing += ["kv." + k for k in ["hit_rate_gpu", "hit_rate_grace", "hit_rate_remote", "transfer_bytes"] if k not in r["kv"]]
missing += ["links.nvlink.%s" % k for k in ["mean_utilisation", "peak_utilisation"] if k not in r["links"].get("nvlink", {})]
if missing: sys.exit("FAIL: report.json lacks " + ", ".join(missing))
if r["schema_version"] < 2: sys.exit("FAIL: schema_version %s" % r["schema_version"])
if r["requests"]["completed"] != r["requests"]["total"] or r["requests"]["total"] == 0:
    sys.exit("FAIL: not every request completed: %s" % r["requests"])
bad = [n for n, c in r["checks"].items() if not c["pass"]]
if bad or len(r["checks"]) < 4: sys.exit("FAIL: checks %s" % r["checks"])
t = json.load(open(os.path.join(out, "trace.json")))
phases = {e["ph"] for e in t["traceEvents"]}
if not {"M", "X"} <= phases: sys.exit("FAIL: trace.json phases %s" % phases)
if t["otherData"]["events"] != r["trace"]["events"]: sys.exit("FAIL: trace event counts differ")
names = [e["args"]["name"] for e in t["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"]
if not any(n.startswith("gpu ") for n in names) or not any(n.startswith("link ") for n in names):
    sys.exit("FAIL: trace.json lacks GPU or link tracks: %s" % names[:10])
html = open(os.path.join(out, "report.html")).read()
if "<svg" not in html or "<script" in html: sys.exit("FAIL: report.html is not self-contained SVG")
print("ok: report.json has every key, trace.json and report.html are written")
PY
msg=$("$exe" run "$scenario" --set 'checks.assertions=[{"metric": "requests.completed", "max": 1}]' 2>&1); rc=$?
if [ "$rc" -ne 1 ] || ! grep -q "FAILED assert requests.completed" <<<"$msg"; then
  echo "FAIL: a failed assertion: rc=$rc"; echo "$msg"; fail=1
else
  echo "ok: a failed check exits 1 and is named"
fi
msg=$("$exe" run "$scenario" --set 'deployment.pools[dep].dp=100' --set 'deployment.pools[dep].ep=100' 2>&1); rc=$?
if [ "$rc" -ne 2 ] || ! grep -q "deployment.pools\[0\]" <<<"$msg"; then
  echo "FAIL: an impossible deployment: rc=$rc"; echo "$msg"; fail=1
else
  echo "ok: an impossible deployment exits 2"
fi
msg=$("$exe" run "$scenario" --set model.profile=glm-5 --set 'deployment.pools=[{"name": "one", "role": "aggregated"}]' 2>&1); rc=$?
if [ "$rc" -ne 2 ] || ! grep -q "deployment.pools\[0\]: does not fit: GLM-5 on pool 'one' instance 0 (GPU 0)" <<<"$msg"; then
  echo "FAIL: a model that does not fit: rc=$rc"; echo "$msg"; fail=1
else
  echo "ok: a model that does not fit exits 2"
fi
msg=$("$exe" run "$scenario" --set outputs.timeline_interval_s=0 2>&1); rc=$?
if [ "$rc" -ne 2 ] || ! grep -q "outputs.timeline_interval_s" <<<"$msg"; then
  echo "FAIL: a bad outputs key: rc=$rc"; echo "$msg"; fail=1
else
  echo "ok: a bad outputs key exits 2"
fi
msg=$("$exe" run /no/such/scenario.json 2>&1); rc=$?
[ "$rc" -eq 2 ] && echo "ok: a missing scenario exits 2" || { echo "FAIL: missing scenario rc=$rc: $msg"; fail=1; }
exit $fail
