#!/usr/bin/env bash
# nvl72emu sweep: a 2 values x 2 seeds sweep of the CI scenario writes a 4-row CSV and JSON whose figures
# come from the runs' reports, and a run replayed with its printed command gives the same event-log hash;
# a failing run makes the sweep exit 1 and prints its replay command; bad --vary/--seeds exit 2 in one line.
set -u
exe=$1 scenario=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
small=(--set workload.max_sessions=2 --set run.max_sim_seconds=120)

"$exe" sweep "$scenario" --vary deployment.threshold_tokens=512,100000 --seeds 1..2 --jobs 2 "${small[@]}" \
  --out "$tmp/sweep" >"$tmp/stdout" 2>&1
rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: sweep exited $rc"; cat "$tmp/stdout"; fail=1; }
grep -q "ttft p50" "$tmp/stdout" || { echo "FAIL: no table printed"; cat "$tmp/stdout"; fail=1; }
python3 - "$tmp/sweep" <<'PY' || fail=1
import csv, json, sys, os
d = sys.argv[1]
rows = list(csv.DictReader(open(os.path.join(d, "sweep.csv"))))
j = json.load(open(os.path.join(d, "sweep.json")))
if len(rows) != 4 or len(j["runs"]) != 4: sys.exit("FAIL: want 4 rows, got %d csv / %d json" % (len(rows), len(j["runs"])))
combos = sorted((r["deployment.threshold_tokens"], r["seed"]) for r in rows)
if combos != [("100000", "1"), ("100000", "2"), ("512", "1"), ("512", "2")]: sys.exit("FAIL: combinations %s" % combos)
for r, run in zip(rows, j["runs"]):
    rep = json.load(open(os.path.join(d, "deployment.threshold_tokens=%s_seed=%s" % (r["deployment.threshold_tokens"], r["seed"]), "report.json")))
    if r["exit_code"] != "0" or run["exit_code"] != 0: sys.exit("FAIL: a run failed: %s" % r)
    if r["event_log_hash"] != rep["event_log_hash"]: sys.exit("FAIL: hash differs from the run's report")
    if abs(float(r["ttft_p90_ms"]) - rep["latency_ms"]["ttft"]["p90"]) > 1e-3: sys.exit("FAIL: ttft p90 differs from the report")
    if int(r["completed"]) != rep["requests"]["completed"] or rep["requests"]["completed"] == 0: sys.exit("FAIL: completed")
    if run["figures"]["tpot_p50_ms"] != rep["latency_ms"]["tpot"]["p50"]: sys.exit("FAIL: json tpot p50 differs")
    if rep["seed"] != int(r["seed"]): sys.exit("FAIL: the run did not take the seed")
    for name, c in rep.get("checks", {}).items():  # each check the run reports has its status cell (pass, FAIL, skipped)
        if r.get("check." + name) != c["status"]: sys.exit("FAIL: check %s cell %s, report %s" % (name, r.get("check." + name), c["status"]))
if len({r["event_log_hash"] for r in rows}) != 4: sys.exit("FAIL: runs with different values or seeds share a hash")
print("ok: sweep.csv and sweep.json hold the 4 runs with their reports' figures")
PY
# Replaying a run with the command the sweep records gives the same run.
replay=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["runs"][3]["replay"])' "$tmp/sweep/sweep.json")
want=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["runs"][3]["event_log_hash"])' "$tmp/sweep/sweep.json")
if eval "$replay" | grep -q "event-log hash $want"; then
  echo "ok: the replay command reproduces the run"
else
  echo "FAIL: replay '$replay' does not give hash $want"; fail=1
fi

# A run that fails (a trace that exists but does not parse) fails the sweep, which prints its replay.
echo "not json" >"$tmp/bad.jsonl"
out=$("$exe" sweep "$scenario" --vary "workload.source=$tmp/bad.jsonl,gen:codex:trials=1" --jobs 2 "${small[@]}" \
  --out "$tmp/failing" 2>&1); rc=$?
replay=$(grep "replay:" <<<"$out" | sed 's/.*replay: //')
if [ "$rc" -ne 1 ] || [ "$(grep -c "replay:" <<<"$out")" -ne 1 ]; then
  echo "FAIL: a failing run: rc=$rc"; echo "$out"; fail=1
elif eval "$replay" >/dev/null 2>&1 || [ $? -ne 2 ]; then
  echo "FAIL: the replay '$replay' does not fail the same way"; fail=1
else
  echo "ok: a failing run exits 1 and its replay fails the same way"
fi

bad() {  # bad PATTERN DESCRIPTION ARGS...: exit 2 with one line naming PATTERN
  local pat=$1 what=$2 out rc; shift 2
  out=$("$exe" sweep "$scenario" --out "$tmp/bad" "$@" 2>&1); rc=$?
  if [ "$rc" -ne 2 ] || [ "$(wc -l <<<"$out")" -ne 1 ] || ! grep -q -- "$pat" <<<"$out"; then
    echo "FAIL: $what: rc=$rc"; echo "$out"; fail=1
  else
    echo "ok: $what"
  fi
}
bad "expected key.path=v1,v2" "--vary without =" --vary threshold
bad "expected key.path=v1,v2" "--vary without a key" --vary =1,2
bad "empty value" "--vary with an empty value" --vary deployment.threshold_tokens=1,,2
bad "empty value" "--vary with no values" --vary deployment.threshold_tokens=
bad "with --seeds" "--vary seed" --vary seed=1,2
bad "varied twice" "a key varied twice" --vary deployment.threshold_tokens=1 --vary deployment.threshold_tokens=2
bad "deployment.threshold_tokens" "a bad value is named before any run" --vary deployment.threshold_tokens=1024,-5
bad "expected a seed" "--seeds not a number" --seeds one..two
bad "expected a seed" "--seeds with an open end" --seeds 1..
bad "A <= B" "--seeds backwards" --seeds 5..2
bad "expected a seed" "a negative seed" --seeds -1..2
bad "jobs" "--jobs 0" --jobs 0
[ -e "$tmp/bad/sweep.csv" ] && { echo "FAIL: bad input still ran a sweep"; fail=1; }
exit $fail
