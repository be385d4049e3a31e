#pragma once
// "requests_accounted": every submitted request completes, or fails with a non-empty reason, or is
// still in flight when the time limit stops the run; none is lost or reported twice. In flight
// (submitted - completed - failed) must equal what the serving system itself still holds, and be zero
// after a drained run.
#include <cstdint>
#include <unordered_set>

#include "emu/check/run_checker.h"
#include "emu/check/violations.h"

namespace nvl::emu {

class RequestAccountingChecker final : public RunChecker {
 public:
  std::string name() const override { return "requests_accounted"; }
  void on_submit(const engine::RequestState& r) override;
  void on_done(const engine::RequestTiming& t) override;
  CheckResult finish(const RunEnd& end) override;

 private:
  std::unordered_set<engine::RequestId> in_flight_;
  std::uint64_t submitted_ = 0;
  std::uint64_t completed_ = 0;
  std::uint64_t failed_ = 0;
  Violations violations_;
};

}  // namespace nvl::emu
