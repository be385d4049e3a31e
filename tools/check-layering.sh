#!/usr/bin/env bash
# The layering check (DESIGN.md "Layers", "Time"): engine/ sees hardware only through engine/hal and time
# only through the runtime, and nothing in engine/, fakegpu/ or fabric/ reads the real clock, starts
# threads or draws unseeded randomness. Usage: check-layering.sh [SOURCE_ROOT]; exit 1 on any violation.
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || { echo "check-layering: cannot enter $root" >&2; exit 2; }

status=0
report() {  # report RULE MATCHES
  [ -n "$2" ] || return 0
  printf 'layering: %s\n%s\n' "$1" "$2" | sed '2,$s/^/  /'
  status=1
}
# grep over C++ sources with comments stripped crudely: whole-line // comments are ignored.
scan() {  # scan REGEX DIR...
  local dirs=()
  for d in "${@:2}"; do [ -d "$d" ] && dirs+=("$d"); done
  [ ${#dirs[@]} -gt 0 ] || return 0
  grep -rnE --include='*.h' --include='*.hpp' --include='*.cpp' --include='*.cc' --include='*.proto' "$1" "${dirs[@]}" \
    | grep -vE '^[^:]+:[0-9]+:[[:space:]]*//' || true
}

report "engine/ includes fakegpu/, fabric/ or the emu harness (only emu/rt/ is allowed)" \
  "$(scan '#[[:space:]]*include[[:space:]]*[<"](fakegpu/|fabric/|tools/|emu/([^r]|r[^t]|rt[^/]))' engine)"
report "engine/ uses Boost.Fiber directly (time and fibers come only through emu/rt)" \
  "$(scan '#[[:space:]]*include[[:space:]]*[<"]boost/fiber' engine)"
report "engine/ calls a timed wait that reads the real clock (use the runtime's sleep, timers and timeouts)" \
  "$(scan '\b(sleep_for|sleep_until|wait_for|wait_until|try_lock_for|try_lock_until|push_wait_for|push_wait_until|pop_wait_for|pop_wait_until|try_push_for|try_pop_for)\b' engine)"
report "real clock read in engine/, fakegpu/ or fabric/ (use Runtime::now)" \
  "$(scan '(_clock::now|\btime\((nullptr|NULL|0|&)|\bgettimeofday\(|\bclock_gettime\()' engine fakegpu fabric)"
report "thread started in engine/, fakegpu/ or fabric/ (the runtime is single-threaded)" \
  "$(scan '(std::thread|std::jthread|std::async|pthread_create)\b' engine fakegpu fabric)"
report "unseeded randomness in engine/, fakegpu/ or fabric/ (use Runtime::rng)" \
  "$(scan '(std::random_device|\brand\(|\bsrand\(|\brandom\(\))' engine fakegpu fabric)"

[ $status -eq 0 ] && echo "layering: ok"
exit $status
