#pragma once
// "determinism": this run's event-log hash equals the one of an earlier run of the same scenario and
// seed (the runner runs the scenario twice when asked to).
#include <string>

#include "emu/check/run_checker.h"

namespace nvl::emu {

class DeterminismChecker final : public RunChecker {
 public:
  explicit DeterminismChecker(std::string first_hash) : first_hash_(std::move(first_hash)) {}
  std::string name() const override { return "determinism"; }
  CheckResult finish(const RunEnd& end) override;

 private:
  std::string first_hash_;
};

}  // namespace nvl::emu
