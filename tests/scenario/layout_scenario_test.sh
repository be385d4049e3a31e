#!/usr/bin/env bash
# One deployment layout (scenarios/layouts/NAME.json) end to end: nvl72emu run exits 0 with every check
# passing and the determinism check on (same seed, same event-log hash), nothing fails, the run drains,
# and report.json shows the layout did what it is for (each instance used, the path its roles imply).
set -u
exe=$1 scenario=$2
name=$(basename "$scenario" .json)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if ! "$exe" run "$scenario" --out "$out" --set outputs.trace=false --set outputs.html=false --set checks.determinism=true \
    >"$out/stdout" 2>"$out/stderr"; then
  echo "FAIL: $name exited non-zero"; cat "$out/stdout" "$out/stderr"; exit 1
fi
python3 - "$out/report.json" "$name" <<'PY'
import json, sys
r, name = json.load(open(sys.argv[1])), sys.argv[2]
def need(ok, what):
    if not ok: sys.exit("FAIL: %s: %s" % (name, what))
need(r["stop_reason"] == "quiescent", "did not drain (%s)" % r["stop_reason"])
need(r["requests"]["failed"] == 0, "failed requests: %s" % r["requests"]["failed_by_reason"])
need(r["requests"]["completed"] > 0, "no request completed")
pools = r["pools"]
for p in pools:
    need(p["steps"] > 0, "%s/%d never stepped" % (p["pool"], p["instance"]))
    need(p.get("routed", 1) > 0 and p.get("prefilled", 1) > 0, "%s/%d served nothing: %s" % (p["pool"], p["instance"], p))
routing = r["routing"]
roles = {p["role"] for p in pools}
if roles == {"decode", "prefill"}:
    need(routing["local"] == 0, "a decode pool prefilled locally: %s" % routing)
if "prefill" not in roles:
    need(routing["prefill_worker"] == 0, "no prefill pool, yet %s" % routing)
else:
    need(routing["prefill_worker"] > 0 and r["kv"]["transfer_bytes"] > 0, "no prompt went to a prefill pool: %s" % routing)
if name == "prefill-rack1-decode-rack0":
    need(all(g >= 72 for p in pools if p["role"] == "prefill" for g in p["gpus"]), "prefill not in rack 1")
    need(r["links"]["nic"]["mean_utilisation"] > 0, "KV between racks must cross the CX8 NICs")
if name == "dep8-prefill-dep32-decode":
    per_rank = [p["prefilled_per_dp_rank"] for p in pools if p["role"] == "prefill"][0]
    need(len(per_rank) == 8 and min(per_rank) > 0, "every DP rank of the DEP8 prefill instance prefills: %s" % per_rank)
if name == "ep144-two-racks":
    need(len(pools[0]["gpus"]) == 144, "EP144 over 144 GPUs")
print("ok: %s: TTFT mean %.1f ms, TPOT mean %.2f ms, %d requests, speedup %.0fx"
      % (name, r["latency_ms"]["ttft"]["mean"], r["latency_ms"]["tpot"]["mean"], r["requests"]["completed"], r["speedup"]))
PY
