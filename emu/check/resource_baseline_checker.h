#pragma once
// "kv_memory_baseline": after a drained run, every KV block pool holds no more blocks for requests
// than after start-up (cached prefixes may stay), and every memory's allocated bytes are what they
// were after start-up. A run stopped at the time limit still has work in flight: the check is skipped
// (it passes and says so).
#include "emu/check/run_checker.h"

namespace nvl::emu {

class ResourceBaselineChecker final : public RunChecker {
 public:
  std::string name() const override { return "kv_memory_baseline"; }
  CheckResult finish(const RunEnd& end) override;
};

}  // namespace nvl::emu
