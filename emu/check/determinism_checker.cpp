#include "emu/check/determinism_checker.h"

namespace nvl::emu {

CheckResult DeterminismChecker::finish(const RunEnd& end) {
  if (end.event_log_hash == first_hash_) return {true, "two runs gave event-log hash " + first_hash_};
  return {false, "two runs of one scenario and seed gave event-log hashes " + first_hash_ + " and " + end.event_log_hash};
}

}  // namespace nvl::emu
