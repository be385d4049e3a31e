#!/usr/bin/env bash
# nvl72emu run on the CI scenario: exit 0, report.json with every documented key, a trace Perfetto can
# open (steps named prefill/decode with their batch as arguments, tracks in time order) and a self-contained report.html; a failed check exits 1 naming it; bad input exits 2.
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
if not any(n.startswith("gpu") for n in names) or not any(n.startswith("link ") for n in names):
    sys.exit("FAIL: trace.json lacks GPU or link tracks: %s" % names[:10])
# Steps are told apart and say what they computed, for whom; each track is in time order.
steps = [e for e in t["traceEvents"] if e["ph"] == "X" and e["name"].endswith(" step")]
kinds = {e["name"] for e in steps}
if not {"prefill step", "decode step"} <= kinds: sys.exit("FAIL: step spans %s" % kinds)
for e in steps:
    a = e.get("args", {})
    lack = [k for k in ["pool", "instance", "step", "batch", "prefill_tokens", "decode_tokens", "kv_context_tokens"] if k not in a]
    if lack: sys.exit("FAIL: a step span lacks %s: %s" % (lack, e))
    if a["batch"] != a["prefill_requests"] + a["decode_requests"]: sys.exit("FAIL: batch size %s" % e)
    if (e["name"] == "decode step") != (a["decode_tokens"] > 0 and a["prefill_tokens"] == 0):
        sys.exit("FAIL: a step's name disagrees with its tokens: %s" % e)
    if a["decode_tokens"] > 0 and a["kv_context_tokens"] == 0: sys.exit("FAIL: decoding with no KV read: %s" % e)
if not any("rank" in e["args"] for e in steps if e["name"] == "decode step"): sys.exit("FAIL: decode steps name no rank")
if not any(e.get("args", {}).get("bytes", 0) > 0 for e in t["traceEvents"] if e["ph"] == "X" and e["pid"] in
           {p["pid"] for p in t["traceEvents"] if p["ph"] == "M" and p["args"]["name"].startswith("link ")}):
    sys.exit("FAIL: no link transfer says its bytes")
last = {}
for e in t["traceEvents"]:
    if e["ph"] == "M": continue
    key = (e["pid"], e.get("tid", 0))
    if e["ts"] < last.get(key, -1): sys.exit("FAIL: track %s out of time order at %s" % (key, e))
    last[key] = e["ts"]
html = open(os.path.join(out, "report.html")).read()
if "<svg" not in html or "<script" in html: sys.exit("FAIL: report.html is not self-contained SVG")
print("ok: report.json has every key, trace.json and report.html are written")
PY
# outputs.trace_detail kernels: inside each step graph a span per kernel and collective, tiling the step.
if ! "$exe" run "$scenario" --set outputs.trace_detail=kernels --set outputs.trace_window_s=2 --out "$out/k" >/dev/null 2>"$out/stderr"; then
  echo "FAIL: run with kernel detail exited non-zero"; cat "$out/stderr"; fail=1
else
  python3 - "$out/k/trace.json" <<'PY' || fail=1
import json, sys
spans = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "X"]
steps = [e for e in spans if e["name"] == "decode step"]
if not steps: sys.exit("FAIL: no decode step traced")
s = steps[len(steps) // 2]
inside = sorted((e for e in spans if (e["pid"], e["tid"]) == (s["pid"], s["tid"]) and e is not s
                 and s["ts"] <= e["ts"] < s["ts"] + s["dur"]), key=lambda e: e["ts"])
names = {e["name"] for e in inside}
if not {"graph launch", "moe.dispatch", "moe.combine"} <= names or not any("fast-forwarded" in n for n in names):
    sys.exit("FAIL: a decode step's parts: %s" % sorted(names))
covered = sum(e["dur"] for e in inside)
if abs(covered - s["dur"]) > 0.01 * len(inside): sys.exit("FAIL: parts cover %.3f us of a %.3f us step" % (covered, s["dur"]))
print("ok: kernel detail tiles each step with its kernels, collectives and fast-forwarded layers")
PY
fi
# --compare: this run beside the first one (another seed), named after the first one's folder.
mkdir -p "$out/base" "$out/cmp"
cp "$out/report.json" "$out/base/report.json"
if ! "$exe" run "$scenario" --seed 7 --out "$out/cmp" --compare "$out/base/report.json" >/dev/null 2>"$out/stderr"; then
  echo "FAIL: run --compare exited non-zero"; cat "$out/stderr"; fail=1
else
  python3 - "$out/cmp/report.html" <<'PY' || fail=1
import sys
html = open(sys.argv[1]).read()
table = html[html.find("<h2>Compared with base</h2>"):]
if not table or "TTFT p50 (ms)" not in table[:table.find("</table>")]: sys.exit("FAIL: no comparison table")
if html.find("Compared with base") > html.find("<h2>Checks</h2>"): sys.exit("FAIL: the comparison comes after the checks")
charts = html.split("<svg")[1:]
over_time = [c for c in charts if "simulated s" in c]
both = [c for c in over_time if "(base)</text>" in c or "no data" in c]
if len(both) != len(over_time) - 1: sys.exit("FAIL: %d of %d plots over time draw the other run" % (len(both), len(over_time)))
print("ok: --compare sets the runs side by side")
PY
fi
echo '{"scenario": "x"}' > "$out/base/not-a-report.json"
for bad in "$out/base/not-a-report.json:schema_version" "$out/none/report.json:cannot"; do
  file=${bad%%:*} want=${bad##*:}
  msg=$("$exe" run "$scenario" --out "$out/cmp" --compare "$file" 2>&1); rc=$?
  if [ "$rc" -ne 2 ] || ! grep -q "$want" <<<"$msg"; then
    echo "FAIL: --compare $file: rc=$rc"; echo "$msg"; fail=1
  else
    echo "ok: --compare with a bad file exits 2 naming $want"
  fi
done
msg=$("$exe" run "$scenario" --compare "$out/base/report.json" 2>&1); rc=$?
if [ "$rc" -ne 2 ] || ! grep -q "give --out" <<<"$msg"; then echo "FAIL: --compare without --out: rc=$rc $msg"; fail=1; fi
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
