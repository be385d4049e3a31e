#!/usr/bin/env bash
# nvl72emu run --event-log FILE: the event log as JSON lines, with what the client saw (every token
# batch, every request's end). Two runs of one seed write the same file and another seed a different
# one; per request the token records add up to its end record's output tokens and every request ends
# once; a file that cannot be written exits 2 before the run starts.
set -u
exe=$1 scenario=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0
quiet=(--set outputs.trace=false --set outputs.html=false)
for run in a:1 b:1 c:2; do
  name=${run%%:*} seed=${run##*:}
  if ! "$exe" run "$scenario" --seed "$seed" --out "$out/$name" "${quiet[@]}" --event-log "$out/$name.jsonl" \
      >"$out/$name.stdout" 2>&1; then
    echo "FAIL: run $name exited non-zero"; cat "$out/$name.stdout"; exit 1
  fi
done
if cmp -s "$out/a.jsonl" "$out/b.jsonl"; then echo "ok: one seed writes one event log"; else
  echo "FAIL: two runs of seed 1 wrote different logs:"; diff "$out/a.jsonl" "$out/b.jsonl" | head -5; fail=1; fi
if cmp -s "$out/a.jsonl" "$out/c.jsonl"; then echo "FAIL: seeds 1 and 2 wrote the same log"; fail=1; else
  echo "ok: another seed writes another log"; fi
python3 - "$out" <<'PY' || fail=1
import collections, json, os, sys
out = sys.argv[1]
report = json.load(open(os.path.join(out, "a", "report.json")))
tokens, ends = collections.Counter(), collections.Counter()
status, batches = {}, 0
for line in open(os.path.join(out, "a.jsonl")):
    r = json.loads(line)
    if r["source"] != "client": continue
    f = r["fields"]
    if r["kind"] == "tokens":
        tokens[f["request"]] += f["count"]
        batches += 1
    elif r["kind"] == "done":
        ends[f["request"]] += 1
        status[f["request"]] = (f["status"], f["output_tokens"])
if not tokens: sys.exit("FAIL: no token records in the log")
if len(ends) != report["requests"]["total"] or set(ends.values()) != {1}:
    sys.exit("FAIL: %d requests ended (%s times), report.json has %d" % (len(ends), set(ends.values()), report["requests"]["total"]))
wrong = [(i, tokens[i], s) for i, s in status.items() if s[0] == "finished" and s[1] != tokens[i]]
if wrong: sys.exit("FAIL: token records do not add up to the output tokens: %s" % wrong[:3])
print("ok: %d requests end once each, their %d token records add up" % (len(ends), batches))
PY
msg=$("$exe" run "$scenario" --event-log /no/such/dir/log.jsonl 2>&1); rc=$?
if [ "$rc" -ne 2 ] || ! grep -q -- "/no/such/dir/log.jsonl: --event-log: cannot open for writing" <<<"$msg" || grep -q TTFT <<<"$msg"; then
  echo "FAIL: an event log that cannot be written: rc=$rc"; echo "$msg"; fail=1
else
  echo "ok: an event log that cannot be written exits 2 before the run"
fi
exit $fail
