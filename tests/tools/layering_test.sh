#!/usr/bin/env bash
# The layering check passes on the real tree and fails, naming the rule, on each kind of violation.
set -u
check=$1
src=$2
fail=0
expect() {  # expect WANT_RC PATTERN DESCRIPTION
  local out rc
  out=$(bash "$check" "$tree" 2>&1); rc=$?
  if [ "$rc" -ne "$1" ] || ! grep -q -- "$2" <<<"$out"; then
    echo "FAIL: $3 (rc=$rc)"; echo "$out"; fail=1
  else
    echo "ok: $3"
  fi
}
violation() {  # violation DIR FILE LINE PATTERN DESCRIPTION
  tree=$(mktemp -d)
  mkdir -p "$tree/engine/hal" "$tree/fakegpu" "$tree/fabric"
  printf '#include "emu/rt/runtime.h"\n#include "engine/hal/types.h"\n// std::thread in a comment is fine\n' \
    > "$tree/engine/ok.cpp"
  printf '%s\n' "$3" > "$tree/$1/$2"
  expect 1 "$4" "$5"
  rm -rf "$tree"
}

tree=$src; expect 0 "layering: ok" "the real tree passes"
tree=$(mktemp -d); mkdir -p "$tree/engine"
printf '#include "emu/rt/runtime.h"\nauto t = rt.now();\n' > "$tree/engine/a.cpp"
expect 0 "layering: ok" "engine/ may include emu/rt/"; rm -rf "$tree"

violation engine x.cpp '#include "fakegpu/device.h"' "engine/ includes fakegpu/" "engine includes fakegpu"
violation engine x.h '#include "fabric/flow.h"' "engine/ includes fakegpu/" "engine includes fabric"
violation engine x.cpp '#include "emu/validate/calibration_row.h"' "engine/ includes" "engine includes the harness"
violation engine x.cpp '#include <boost/fiber/all.hpp>' "uses Boost.Fiber directly" "engine includes Boost.Fiber"
violation engine x.cpp 'boost::this_fiber::sleep_for(d);' "timed wait" "engine sleeps with Boost.Fiber"
violation engine x.cpp 'cv.wait_until(lock, t);' "timed wait" "engine waits with a real deadline"
violation engine x.cpp 'ch.pop_wait_for(v, d);' "timed wait" "engine uses a timed channel pop"
violation engine x.cpp 'm.try_lock_for(d);' "timed wait" "engine uses a timed mutex"
violation fakegpu x.cpp 'auto t = std::chrono::steady_clock::now();' "real clock read" "fakegpu reads the clock"
violation fabric x.cpp 'std::thread worker(f);' "thread started" "fabric starts a thread"
violation engine x.cpp 'std::random_device rd;' "unseeded randomness" "engine uses random_device"
violation fabric x.cpp 'int r = rand() % 6;' "unseeded randomness" "fabric calls rand()"
exit $fail
