#!/usr/bin/env bash
# sweep and study on Slurm (--slurm): against a running cluster (CI starts a single-node one with
# tools/local-slurm.sh and sets NVL_REQUIRE_SLURM=1; elsewhere the test skips when sinfo gets no answer):
#  - a sweep submitted as a job array gathers the same rows as the same sweep run here (runs are deterministic);
#  - a study whose array task is cancelled before it starts re-submits that run once and still answers;
#  - a bad --slurm-time, an unknown partition and a missing sbatch exit 2 naming them.
set -u
exe=$1 scenario=$(realpath "$2")
tmp=$(mktemp -d)
trap 'scancel --name=nvl72emu-test-blocker > /dev/null 2>&1; rm -rf "$tmp"' EXIT
fail=0
small=(--set workload.max_sessions=2 --set run.max_sim_seconds=120)

# Missing sbatch: needs no cluster.
msg=$(PATH=/nonexistent "$exe" sweep "$scenario" --vary deployment.threshold_tokens=512 "${small[@]}" --slurm \
  --out "$tmp/nosbatch" 2>&1); rc=$?
if [ "$rc" -ne 2 ] || ! grep -q "sbatch: --slurm: not found on PATH" <<<"$msg"; then
  echo "FAIL: a missing sbatch: rc=$rc"; echo "$msg"; fail=1
else
  echo "ok: a missing sbatch exits 2 naming it"
fi
msg=$("$exe" sweep "$scenario" --vary deployment.threshold_tokens=512 --slurm --slurm-time soon --out "$tmp/x" 2>&1); rc=$?
if [ "$rc" -ne 2 ] || ! grep -q -- "--slurm-time" <<<"$msg"; then
  echo "FAIL: a bad --slurm-time: rc=$rc"; echo "$msg"; fail=1
else
  echo "ok: a bad --slurm-time exits 2 naming it"
fi

if ! timeout 10 sinfo -h > /dev/null 2>&1; then
  if [ "${NVL_REQUIRE_SLURM:-0}" = 1 ]; then echo "FAIL: NVL_REQUIRE_SLURM=1 but sinfo gets no answer"; exit 1; fi
  echo "skipped: no Slurm cluster answers (start one with tools/local-slurm.sh start)"
  [ "$fail" -eq 0 ] && exit 77 || exit 1
fi

msg=$("$exe" sweep "$scenario" --vary deployment.threshold_tokens=512 "${small[@]}" --slurm \
  --slurm-partition no-such-partition --out "$tmp/nopart" 2>&1); rc=$?
if [ "$rc" -ne 2 ] || ! grep -q "sbatch: --slurm: refused the job.*[Pp]artition" <<<"$msg"; then
  echo "FAIL: an unknown partition: rc=$rc"; echo "$msg"; fail=1
else
  echo "ok: an unknown partition exits 2 with sbatch's reason"
fi

# The same sweep here and on Slurm.
sweep=(sweep "$scenario" --vary deployment.threshold_tokens=512,100000 --seeds 1..2 "${small[@]}")
"$exe" "${sweep[@]}" --jobs 2 --out "$tmp/here" > "$tmp/here.txt" 2>&1 || { echo "FAIL: the sweep here"; cat "$tmp/here.txt"; fail=1; }
"$exe" "${sweep[@]}" --slurm --slurm-time 10 --slurm-mem 2G --out "$tmp/slurm" > "$tmp/slurm.txt" 2>&1 \
  || { echo "FAIL: the sweep on Slurm"; cat "$tmp/slurm.txt"; fail=1; }
python3 - "$tmp/here/sweep.json" "$tmp/slurm/sweep.json" <<'PY' || fail=1
import json, sys
here, slurm = (json.load(open(f))["runs"] for f in sys.argv[1:])
if len(slurm) != 4 or any(r["exit_code"] != 0 for r in slurm): sys.exit("FAIL: Slurm runs %s" % slurm)
hashes = lambda runs: sorted(r["event_log_hash"] for r in runs)
if hashes(here) != hashes(slurm): sys.exit("FAIL: event-log hashes differ:\n%s\n%s" % (hashes(here), hashes(slurm)))
print("ok: a sweep on Slurm gathers the same four runs as here")
PY

# A study whose second run is cancelled while pending: a job holding every core keeps the array waiting.
sbatch --parsable --job-name=nvl72emu-test-blocker --exclusive --time=2 --output=/dev/null --wrap="sleep 60" > /dev/null
python3 - "$tmp/study.json" "$scenario" <<'PY'
import json, sys
json.dump({"name": "slurm", "question": "Which threshold keeps TTFT p90 under 60 s?", "scenario": sys.argv[2],
           "set": ["workload.max_sessions=2", "run.max_sim_seconds=120"],
           "x": {"key": "deployment.threshold_tokens", "values": [512, 100000]}, "seeds": "1",
           "metrics": ["latency_ms.ttft.p90"],
           "answer": {"highest_x_within": [{"metric": "latency_ms.ttft.p90", "max": 60000}]}}, open(sys.argv[1], "w"))
PY
"$exe" study "$tmp/study.json" --slurm --slurm-time 10 --slurm-mem 2G --out "$tmp/study" > "$tmp/study.txt" 2>&1 &
study_pid=$!
array=""
for _ in $(seq 60); do
  array=$(squeue -h -n nvl72emu-study -o %F | head -1)
  [ -n "$array" ] && break
  sleep 0.5
done
if [ -z "$array" ]; then
  echo "FAIL: the study's array never appeared in squeue"; fail=1
else
  scancel "${array}_1"
fi
scancel --name=nvl72emu-test-blocker
wait "$study_pid"; rc=$?
if [ "$rc" -ne 0 ] || ! grep -q "1 runs left no exit status.*submitting them again" "$tmp/study.txt"; then
  echo "FAIL: the cancelled run was not re-submitted (rc=$rc)"; cat "$tmp/study.txt"; fail=1
else
  python3 - "$tmp/study/study.json" <<'PY' || fail=1
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
if len(runs) != 2 or any(r["exit_code"] != 0 for r in runs): sys.exit("FAIL: study runs %s" % runs)
print("ok: a run cancelled on Slurm is submitted again and the study answers")
PY
fi
exit $fail
