# Sourced by the scenario effect tests (fault_effects, grace_tier, fabric_modes), with exe (nvl72emu) and
# dir (the scenarios' folder) set: runs into a scratch folder, reads figures, checks ranges; `fail` is 1
# once a check failed.
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0

# run NAME SCENARIO ARGS...: runs SCENARIO.json of dir into $out/NAME (its report.json).
run() {
  local name=$1 scenario=$2
  shift 2
  if ! "$exe" run "$dir/$scenario.json" --out "$out/$name" --set outputs.trace=false --set outputs.html=false "$@" \
      >"$out/$name.stdout" 2>&1; then
    echo "FAIL: $name exited non-zero" >&2; cat "$out/$name.stdout" >&2; return 1
  fi
}
# get NAME PATH...: figures of NAME's report.json ("latency_ms.ttft.mean"), on one line.
get() {
  python3 -c 'import json,sys
r=json.load(open(sys.argv[1]))
vals=[]
for p in sys.argv[2:]:
    v=r
    for k in p.split("."): v=v[k]
    vals.append(str(v))
print(" ".join(vals))' "$out/$1/report.json" "${@:2}"
}
# check WHAT VALUE LOW HIGH: LOW <= VALUE <= HIGH.
check() {
  if python3 -c 'import sys; v,lo,hi=map(float,sys.argv[2:5]); sys.exit(0 if lo <= v <= hi else 1)' "$@"; then
    echo "ok: $1 = $2 in [$3, $4]"
  else
    echo "FAIL: $1 = $2, expected in [$3, $4]"; fail=1
  fi
}
ratio() { python3 -c 'import sys; a,b=map(float,sys.argv[1:3]); print(a / b if b else (1.0 if a == b else float("inf")))' "$1" "$2"; }
