#!/usr/bin/env bash
# nvl72emu validate --measured, one expressible row end to end (seconds): a GB200 DeepSeek-V3 FP8 row with a
# TP4 x EP4 prefill worker and a DP8 x EP8 decode worker runs as a child `nvl72emu run`; its emulated means
# are the run's report.json benchmark means and its errors follow from them.
set -u
exe=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
header="id,system,backend,backend_version,model_path,precision,mode,isl,osl,batch_size,tp_size,attention_dp_size,moe_ep_size,prefill_num_workers,prefill_tp_size,prefill_attention_dp_size,prefill_moe_ep_size,prefill_batch_size,decode_num_workers,decode_tp_size,decode_attention_dp_size,decode_moe_tp_size,decode_moe_ep_size,decode_batch_size,silicon_ttft_ms,silicon_tpot_ms,silicon_data_source"
row="small,gb200,sglang,0.5,deepseek-ai/DeepSeek-V3,fp8,disagg,1024,64,,,,,1,4,1,4,1,1,1,8,1,8,1,150,8,silicon_concurrency=4"
printf '%s\n%s\n' "$header" "$row" >"$tmp/t.csv"
"$exe" validate --measured "$tmp/t.csv" --out "$tmp/out" --json "$tmp/r.json" >"$tmp/stdout" 2>&1
rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: replay exited $rc"; cat "$tmp/stdout" "$tmp"/out/small/log.txt; exit 1; }
python3 - "$tmp" <<'PY'
import json, sys, os
d = sys.argv[1]
r = json.load(open(os.path.join(d, "r.json")))["rows"][0]
if not r["expressible"] or r["reason"]: sys.exit("FAIL: row not run: %s" % r)
rep = json.load(open(os.path.join(d, "out", "small", "report.json")))["benchmark"]
if r["emulated_ttft_ms"] != rep["ttft_ms"]["mean"] or r["emulated_tpot_ms"] != rep["tpot_ms"]["mean"]:
    sys.exit("FAIL: emulated means are not the report's: %s vs %s" % (r, rep))
if not (r["emulated_ttft_ms"] > 0 and r["emulated_tpot_ms"] > 0): sys.exit("FAIL: empty means %s" % r)
for m, measured in (("ttft", 150), ("tpot", 8)):
    want = (r["emulated_%s_ms" % m] - measured) / measured * 100
    if abs(r["%s_error_pct" % m] - want) > 1e-9: sys.exit("FAIL: %s error %s, want %s" % (m, r["%s_error_pct" % m], want))
print("ok: the row ran and its errors follow from the report's means")
PY
