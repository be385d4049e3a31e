#include "emu/check/request_accounting_checker.h"

namespace nvl::emu {

void RequestAccountingChecker::on_submit(const engine::RequestState& r) {
  ++submitted_;
  if (!in_flight_.insert(r.id).second) violations_.add("request " + std::to_string(r.id) + " submitted twice");
}

void RequestAccountingChecker::on_done(const engine::RequestTiming& t) {
  if (in_flight_.erase(t.id) == 0) {
    violations_.add("request " + std::to_string(t.id) + " reported over but not in flight (unknown or reported twice)");
    return;
  }
  if (t.failure.empty()) {
    ++completed_;
    if (!t.finished) violations_.add("request " + std::to_string(t.id) + " completed without a finish time");
  } else {
    ++failed_;
  }
}

CheckResult RequestAccountingChecker::finish(const RunEnd& end) {
  const std::uint64_t open = in_flight_.size();
  if (open != end.system_in_flight) {
    violations_.add(std::to_string(open) + " requests in flight by the workload's count, " +
                    std::to_string(end.system_in_flight) + " by the serving system's");
  }
  if (end.quiescent && open > 0) {
    violations_.add("the run drained with " + std::to_string(open) + " requests neither completed nor failed (first: " +
                    std::to_string(*in_flight_.begin()) + ")");
  }
  return violations_.result(std::to_string(submitted_) + " submitted = " + std::to_string(completed_) +
                            " completed + " + std::to_string(failed_) + " failed + " + std::to_string(open) +
                            " in flight");
}

}  // namespace nvl::emu
