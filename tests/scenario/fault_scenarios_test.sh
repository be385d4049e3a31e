#!/usr/bin/env bash
# Every fault scenario (scenarios/faults/*.json) on a few seeds: nvl72emu run exits 0 (every check
# passes: requests accounted, tokens once and in order, KV and memory back to baseline, nothing routed
# to a dead rank), every request that failed names its fault, and report.json holds the fault timeline:
# each fault hit; the ones the engine must notice (GPU lost, ECC, crashed worker) detected, after the
# detection delay, and recovered; in the scenarios whose fault hits a worker holding requests, those
# requests are counted (requests_affected). The first seed of each small scenario also runs twice for
# the determinism check (same seed, same event-log hash). Every scenario drains (stops quiescent), so the
# KV and memory baseline check runs instead of being skipped.
set -u
exe=$1 dir=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0
for scenario in "$dir"/*.json; do
  name=$(basename "$scenario" .json)
  seeds="1 2 3"
  [ "$name" = bad-day ] && seeds="1 2"
  for seed in $seeds; do
    extra=()
    [ "$seed" = 1 ] && [ "$name" != bad-day ] && extra=(--set checks.determinism=true)
    run="$out/$name-$seed"
    if ! "$exe" run "$scenario" --seed "$seed" --out "$run" --set outputs.trace=false --set outputs.html=false \
        "${extra[@]}" >"$run.stdout" 2>"$run.stderr"; then
      echo "FAIL: $name seed $seed exited non-zero"; cat "$run.stdout" "$run.stderr"; fail=1; continue
    fi
    python3 - "$run/report.json" "$name" "$seed" <<'PY' || fail=1
import json, sys
report, name, seed = sys.argv[1], sys.argv[2], sys.argv[3]
r = json.load(open(report))
where = "%s seed %s" % (name, seed)
faults = r["faults"]
if not faults: sys.exit("FAIL: %s: no fault in the timeline" % where)
noticed = {"gpu_lost", "gpu_ecc", "worker_crash"}
for f in faults:
    if f["kind"] in noticed and f["hit_s"] < r["sim_time_s"] - 5:
        if f["detected_s"] is None: sys.exit("FAIL: %s: %s on %s never detected" % (where, f["kind"], f["target"]))
        if f["detected_s"] < f["hit_s"]: sys.exit("FAIL: %s: detected before the hit" % where)
        if f["recovered_s"] is None and f["kind"] != "gpu_lost":
            sys.exit("FAIL: %s: %s on %s never recovered" % (where, f["kind"], f["target"]))
moving = {"gpu-lost", "worker-crash", "prefill-gpu-lost", "prefill-gpu-ecc", "prefill-worker-crash"}
if name in moving and not all(f["requests_affected"] > 0 for f in faults):
    sys.exit("FAIL: %s: the fault hits a worker holding requests, yet requests_affected is %s"
             % (where, [f["requests_affected"] for f in faults]))
if name == "prefill-instance-lost":
    # Instance 0 is lost at 10 s: the prefill path stays on and instance 1 takes the long prompts from then
    # on (with one prefill instance, prefill-gpu-lost.json, every prompt goes to local prefill instead).
    lost, survivor = [p for p in r["pools"] if p["role"] == "prefill"]
    if survivor["prefilled"] <= lost["prefilled"] or r["routing"]["prefill_worker"] < lost["prefilled"] + survivor["prefilled"]:
        sys.exit("FAIL: %s: the surviving prefill instance did not take over: %s %s" % (where, r["pools"], r["routing"]))
words = {"down", "partition", "Xid", "lost", "failed", "exited", "aborted"}
for reason in r["requests"]["failed_by_reason"]:
    if not reason or not any(w in reason for w in words):
        sys.exit("FAIL: %s: a failure reason that names no fault: %r" % (where, reason))
if r["stop_reason"] != "quiescent":
    sys.exit("FAIL: %s: did not drain (%s)" % (where, r["stop_reason"]))
PY
  done
done
exit $fail
