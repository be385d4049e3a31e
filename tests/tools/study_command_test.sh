#!/usr/bin/env bash
# nvl72emu study end to end: two variants (router policies) at two rates and two seeds on the CI
# scenario; study.md states the answer with its number, study.html plots each figure with a band per
# variant, study.json holds all 8 runs; bad study files exit 2 naming what is wrong.
set -u
exe=$1 scenario=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0
study() {  # study FILE [EXTRA-JSON-MERGE]
  python3 - "$1" "$scenario" "${2:-{\}}" <<'PY'
import json, sys
s = {"name": "routers", "question": "Which router keeps TTFT p90 under 60 s at the higher rate?",
     "scenario": sys.argv[2], "set": ["run.max_sim_seconds=3600"],
     "x": {"key": "workload.rate_sessions_per_s", "label": "sessions/s", "values": [0.5, 2]},
     "variants": [{"name": "cache-aware", "set": ["deployment.router_policy=cache_aware"]},
                  {"name": "round-robin", "set": ["deployment.router_policy=round_robin"]}],
     "seeds": "1..2", "metrics": ["latency_ms.ttft.p90", "throughput.output_tokens_per_s"],
     "answer": {"highest_x_within": [{"metric": "latency_ms.ttft.p90", "max": 60000}]}}
s.update(json.loads(sys.argv[3]))
json.dump(s, open(sys.argv[1], "w"))
PY
}
study "$out/study.json"
if ! "$exe" study "$out/study.json" --jobs 2 --out "$out/result" > "$out/stdout" 2>&1; then
  echo "FAIL: study exited non-zero"; cat "$out/stdout"; fail=1
fi
python3 - "$out/result" <<'PY' || fail=1
import json, os, re, sys
d = sys.argv[1]
md = open(os.path.join(d, "study.md")).read()
answer = md[md.find("**Answer.**"):md.find("## Results")]
if not re.search(r"up to \*\*[0-9.]+\*\*", answer): sys.exit("FAIL: the answer carries no number: " + answer)
if md.count("| cache-aware |") != 2 or md.count("| round-robin |") != 2: sys.exit("FAIL: the table lacks rows:\n" + md)
if "not yet calibrated on Blackwell" not in md and "from measured tables" not in md: sys.exit("FAIL: no calibration line")
html = open(os.path.join(d, "study.html")).read()
if html.count("<svg") != 2 or html.count("<polygon") != 4: sys.exit("FAIL: study.html plots")
runs = json.load(open(os.path.join(d, "study.json")))["runs"]
if len(runs) != 8 or any(r["exit_code"] != 0 for r in runs): sys.exit("FAIL: study.json runs %s" % runs)
print("ok: a two-variant two-seed study writes its answer, table, plots and runs")
PY
for bad in '{"metrics": ["latency_ms.ttft.p95"]}|metrics' '{"x": {"key": "workload.rate_sessions_per_s", "values": []}}|x.values' \
           '{"variants": [{"name": "odd", "set": ["deployment.router_policy=psychic"]}]}|variants[0] '"'"'odd'"'"; do
  study "$out/bad.json" "${bad%%|*}"
  msg=$("$exe" study "$out/bad.json" --out "$out/bad" 2>&1); rc=$?
  if [ "$rc" -ne 2 ] || ! grep -qF "${bad#*|}" <<<"$msg"; then
    echo "FAIL: bad study ${bad%%|*}: rc=$rc"; echo "$msg"; fail=1
  else
    echo "ok: a bad study exits 2 naming ${bad#*|}"
  fi
done
exit $fail
