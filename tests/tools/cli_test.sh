#!/usr/bin/env bash
# nvl72emu: --version and --help exit 0; bad arguments print one clear line and exit 2.
set -u
exe=$1
scenarios=$2
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() {  # check WANT_RC PATTERN DESCRIPTION ARGS...
  local want=$1 pat=$2 what=$3 out rc; shift 3
  out=$("$exe" "$@" 2>&1); rc=$?
  if [ "$rc" -ne "$want" ] || ! grep -q -- "$pat" <<<"$out"; then
    echo "FAIL: $what: rc=$rc"; echo "$out"; fail=1
  else
    echo "ok: $what"
  fi
}
check 0 "^nvl72emu [0-9]" "--version prints the version" --version
check 0 "Usage: nvl72emu" "--help prints usage" --help
check 2 "not expected: --bogus" "an unknown flag exits 2" --bogus
check 2 "not expected: frobnicate" "an unknown subcommand exits 2" frobnicate
check 2 "no calibration row matches" "validate --only with no match exits 2" validate --only no_such_row
check 0 "2 rows, 2 pass, 0 fail" "validate --only v6 runs V6's rows alone and exits 0" validate --only v6
check 2 "excludes" "validate --strict with --measured exits 2" validate --strict --measured /no/such.csv
check 2 "no such file or folder" "trace stats on a missing trace exits 2" trace stats /no/such/trace.jsonl
# collective-test: gb300's measured 4-GPU all-reduce of 1 MiB is 19.09 us (fabric/profiles/measured/gb300-nvl72/nccl.csv),
# algbw 1048576 B / 19.09 us = 54.93 GB/s, busbw x 2(4-1)/4 = 82.39 GB/s.
check 0 "1048576 .*19.09  *54.93  *82.39" "collective-test prints nccl-tests' row for a measured size" \
  collective-test all_reduce --gpus 4 --min-bytes 1048576 --max-bytes 1048576
check 0 "Avg bus bandwidth" "collective-test over 72 GPUs of hgx-h100 nodes (flow model across nodes)" \
  collective-test alltoall --gpus 72 --cluster hgx-h100 --min-bytes 1048576 --max-bytes 4194304
check 2 "KIND: expected all_reduce" "collective-test with an unknown kind exits 2" collective-test allreduce
check 2 "expected 2 to 72" "collective-test with one GPU exits 2" collective-test all_gather --gpus 1
check 2 "expected 0 < min <= max" "collective-test with sizes out of order exits 2" \
  collective-test all_gather --min-bytes 64 --max-bytes 8
check 2 "step-factor: expected at least 2" "collective-test with step factor 1 exits 2" \
  collective-test all_gather --step-factor 1
check 2 "no-such-rack" "collective-test on an unknown profile exits 2" collective-test all_gather --cluster no-such-rack
# The default scenario prices its kernels from SGLang's measured GB300 tables (fakegpu/profiles/gb300.json), not
# the roofline: most GPU time falls on table shapes (GLM-5's own MoE, GEMM and DSA shapes are measured).
check 0 "kernels: sglang, [5-9][0-9]\.[0-9]% of GPU kernel time priced from measured tables" \
  "the default scenario is priced from measured tables" \
  run "$scenarios/nvl72-glm5-codex.json" --set run.max_sim_seconds=20 --out "$tmp/default"
# run: input that once escaped as an internal error (exit 3), or was found only after the run, exits 2
# naming the key, line or path, before any work.
small=$scenarios/ci/small-pd.json
check 2 "run.max_sim_seconds: at most a year" "run with max_sim_seconds beyond the clock exits 2" \
  run "$small" --set run.max_sim_seconds=1e10
check 2 "cluster.fabric_profile: no fabric (node) profile 'nope'" "run with an unknown fabric profile names its key" \
  run "$small" --set cluster.fabric_profile=nope
check 2 "deployment.grace_bytes_per_gpu: missing key" "a Grace tier without bytes exits 2" \
  run "$small" --set deployment.grace_tier=write_back
check 2 "mtp_draft_tokens: expected an integer in \[0, 16\]" "1000 MTP draft tokens exit 2" \
  run "$small" --set "deployment.pools[dep].mtp_draft_tokens=1000"
sed 's/"seed": 1,/"seed": 1, "seed": 2,/' "$small" > "$tmp/dup.json"
check 2 "dup.json: seed: duplicate key" "a duplicate JSON key exits 2" run "$tmp/dup.json"
printf '{"timestamp": 0, "input_length": 0, "output_length": 10, "hash_ids": []}\n' > "$tmp/empty-prompt.jsonl"
check 2 "empty-prompt.jsonl: line 1: input_length: expected an integer in \[1," "a Mooncake line with input_length 0 exits 2" \
  run "$small" --set workload.source="$tmp/empty-prompt.jsonl"
check 2 "/proc/nvl72emu-out: --out: cannot" "an --out that cannot be written exits 2 before the run" \
  run "$small" --out /proc/nvl72emu-out
touch "$tmp/a-file"
check 2 "a-file/out: --out: cannot create the folder" "an --out under a file exits 2" run "$small" --out "$tmp/a-file/out"
# After its restart with the heap tunables (tools/heap_tunables.h) the process keeps its name and runs with
# them; a tunable the user named keeps the user's setting. (ld.so rewrites GLIBC_TUNABLES in place as it
# reads it, so the restarted process's environment shows the first tunable only.)
serve_env() {
  GLIBC_TUNABLES="$1" "$exe" serve "$scenarios/ci/live.json" --http-port 0 --grpc-port -1 > "$tmp/serve.out" 2>&1 &
  pid=$!
  for _ in $(seq 100); do grep -q "serving" "$tmp/serve.out" && break; sleep 0.1; done
  name=$(cat /proc/$pid/comm 2>/dev/null)
  env=$(tr '\0' '\n' < /proc/$pid/environ 2>/dev/null | grep -a '^GLIBC_TUNABLES=')
  kill $pid; wait $pid 2>/dev/null
}
serve_env ""
if [ "$name" = nvl72emu ] && [[ "$env" == GLIBC_TUNABLES=glibc.malloc.hugetlb=1* ]]; then
  echo "ok: the restarted process is still named nvl72emu and runs with the heap tunables"
else
  echo "FAIL: after the restart the process is named '$name' with '$env'"; cat "$tmp/serve.out"; fail=1
fi
serve_env "glibc.malloc.tcache_count=7"
if [ "$name" = nvl72emu ] && [[ "$env" == GLIBC_TUNABLES=glibc.malloc.tcache_count=7* ]]; then
  echo "ok: a tunable the user set is kept"
else
  echo "FAIL: with the user's tcache_count=7 the restart left '$env'"; fail=1
fi
exit $fail
