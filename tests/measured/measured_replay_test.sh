#!/usr/bin/env bash
# nvl72emu validate --measured: a bad table exits 2 naming the line and column; rows the emulator cannot
# express are listed with the mapping's reason (an unknown system) or the deployment check's (TP3 does not
# divide DeepSeek-V3's heads), with the fixed JSON names; --only selects rows by a regular expression.
set -u
exe=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
header="id,system,backend,backend_version,model_path,precision,mode,isl,osl,batch_size,tp_size,attention_dp_size,moe_ep_size,prefill_num_workers,prefill_tp_size,prefill_attention_dp_size,prefill_moe_ep_size,prefill_batch_size,decode_num_workers,decode_tp_size,decode_attention_dp_size,decode_moe_tp_size,decode_moe_ep_size,decode_batch_size,silicon_ttft_ms,silicon_tpot_ms,silicon_data_source"
unknown_system="mi_row,mi355x,sglang,0.5,deepseek-ai/DeepSeek-V3,fp8,agg,1024,1024,8,8,1,8,,,,,,,,,,,,100,10,silicon_concurrency=8"
tp3_decode="tp3_row,gb200,sglang,0.5,deepseek-ai/DeepSeek-V3,fp8,disagg,1024,1024,,,,,1,4,1,4,1,1,3,1,1,3,4,200,20,silicon_concurrency=4"

printf '%s\n%s\n%s\n' "$header" "$unknown_system" "${tp3_decode/,1024,1024,/,1024,many,}" >"$tmp/bad.csv"
out=$("$exe" validate --measured "$tmp/bad.csv" --out "$tmp/bad" 2>&1); rc=$?
if [ "$rc" -ne 2 ] || ! grep -q "bad.csv: line 3, column osl: 'many' is not a whole number" <<<"$out"; then
  echo "FAIL: a bad row: rc=$rc"; echo "$out"; fail=1
fi

printf '%s\n%s\n%s\n' "$header" "$unknown_system" "$tp3_decode" >"$tmp/t.csv"
"$exe" validate --measured "$tmp/t.csv" --jobs 2 --out "$tmp/out" --json "$tmp/r.json" >"$tmp/stdout" 2>&1
rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: replay exited $rc"; cat "$tmp/stdout"; fail=1; }
grep -q "^\[2/2\]" "$tmp/stdout" || { echo "FAIL: no progress line per row"; cat "$tmp/stdout"; fail=1; }
grep -q "not expressible (gb200 sglang fp8, 1 row): deployment.pools\[0\].tp: TP3 does not divide" "$tmp/stdout" ||
  { echo "FAIL: the summary lacks the refused row's reason"; cat "$tmp/stdout"; fail=1; }
python3 - "$tmp" <<'PY' || fail=1
import json, sys, os
d = sys.argv[1]
j = json.load(open(os.path.join(d, "r.json")))
rows = {r["id"]: r for r in j["rows"]}
names = {"id", "expressible", "reason", "measured_ttft_ms", "emulated_ttft_ms", "ttft_error_pct", "measured_tpot_ms",
         "emulated_tpot_ms", "tpot_error_pct", "config"}
for r in j["rows"]:
    if not names <= set(r): sys.exit("FAIL: row lacks %s" % (names - set(r)))
mi, tp3 = rows["mi_row"], rows["tp3_row"]
if mi["expressible"] or mi["reason"] != "system mi355x: no cluster profile": sys.exit("FAIL: unknown system row %s" % mi)
if tp3["expressible"] or not tp3["reason"].startswith("deployment.pools[0].tp: TP3 does not divide"):
    sys.exit("FAIL: refused layout row %s" % tp3)
if tp3["measured_ttft_ms"] != 200 or tp3["emulated_ttft_ms"] is not None or tp3["tpot_error_pct"] is not None:
    sys.exit("FAIL: refused row figures %s" % tp3)
scenario = json.load(open(os.path.join(d, "out", "tp3_row", "scenario.json")))
decode = scenario["deployment"]["pools"][0]
if (decode["role"], decode["tp"], decode["ep"], decode["max_running"]) != ("decode", 3, 3, 4): sys.exit("FAIL: scenario %s" % decode)
g = j["groups"]
if [(x["system"], x["rows"], x["not_expressible"]) for x in g] != [("mi355x", 1, 1), ("gb200", 1, 1)]:
    sys.exit("FAIL: groups %s" % g)
print("ok: both rows reported as not expressible with their reasons")
PY

"$exe" validate --measured "$tmp/t.csv" --only '^tp3' --out "$tmp/only" --json "$tmp/only.json" >/dev/null 2>&1
python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["rows"]; sys.exit(0 if [x["id"] for x in r]==["tp3_row"] else "FAIL: --only kept %s" % r)' \
  "$tmp/only.json" || fail=1
out=$("$exe" validate --measured "$tmp/t.csv" --only '(' --out "$tmp/only" 2>&1); rc=$?
[ "$rc" -eq 2 ] && grep -q "not a regular expression" <<<"$out" || { echo "FAIL: a bad --only: rc=$rc $out"; fail=1; }
out=$("$exe" validate --measured "$tmp/t.csv" --only 'nothing' --out "$tmp/only" 2>&1); rc=$?
[ "$rc" -eq 2 ] && grep -q "no row id" <<<"$out" || { echo "FAIL: --only matching nothing: rc=$rc $out"; fail=1; }
exit $fail
