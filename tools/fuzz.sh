#!/usr/bin/env bash
# Builds the parsers' libFuzzer targets with clang, ASan and UBSan into build-fuzz/ (FUZZ_BUILD_DIR), then
# runs each for SECONDS (default 60) from the seed corpus in fuzz/corpus/<target>/. New inputs go to
# build-fuzz/fuzz-corpus/<target>/, crashes to build-fuzz/fuzz-artifacts/<target>/ (copy a fixed one to
# fuzz/corpus/<target>/bad-<what> so the replay test keeps it fixed). Exit 1 when any target crashed.
#   tools/fuzz.sh [SECONDS] [TARGET...]     targets: scenario mooncake azure claude_code model_profile
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh fuzz
seconds=${1:-60}
[ $# -gt 0 ] && shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(scenario mooncake azure claude_code model_profile)
build=${FUZZ_BUILD_DIR:-build-fuzz}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
log=$(mktemp)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DNVL_FUZZ=ON -DNVL_SANITIZE=address,undefined "${launcher[@]}" > "$log" || { cat "$log"; exit 1; }
rm -f "$log"
cmake --build "$build" -j "$(nproc)" --target "${targets[@]/#/fuzz_}"

crashed=()
for t in "${targets[@]}"; do
  mkdir -p "$build/fuzz-corpus/$t" "$build/fuzz-artifacts/$t"
  echo "fuzz: $t for ${seconds}s"
  # A parser must answer fast and in bounded memory: a slow or huge input is a finding too (the timeout
  # leaves room for a loaded machine: one input parses in milliseconds).
  dict=()
  [ "$t" = azure ] || dict=(-dict=fuzz/json.dict)
  if ! "$build/bin/fuzz_$t" "${dict[@]}" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$build/fuzz-artifacts/$t/" "$build/fuzz-corpus/$t" "fuzz/corpus/$t" \
      > "$build/fuzz-$t.log" 2>&1; then
    crashed+=("$t")
    tail -40 "$build/fuzz-$t.log"
  fi
  grep -E "^(stat::number_of_executed_units|stat::new_units_added)" "$build/fuzz-$t.log" | tr '\n' ' '; echo
done
if [ ${#crashed[@]} -gt 0 ]; then
  echo "fuzz: crashes in ${crashed[*]} (inputs in $build/fuzz-artifacts/)"
  exit 1
fi
echo "fuzz: no crash in ${targets[*]}"
