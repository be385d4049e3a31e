#pragma once
// "no_error_events": the event log holds no error-severity record (broken invariants are logged as
// errors; injected faults are warnings).
#include "emu/check/run_checker.h"

namespace nvl::emu {

class ErrorEventChecker final : public RunChecker {
 public:
  std::string name() const override { return "no_error_events"; }
  CheckResult finish(const RunEnd& end) override;
};

}  // namespace nvl::emu
