#pragma once
// "no_routing_to_dead_ranks": once the health monitor has declared a DP rank dead
// (health/rank_declared_dead), the router sends it nothing (router/routed) until it is back
// (health/rank_back).
#include <cstdint>
#include <set>

#include "emu/check/run_checker.h"
#include "emu/check/violations.h"

namespace nvl::emu {

class DeadRankRoutingChecker final : public RunChecker {
 public:
  std::string name() const override { return "no_routing_to_dead_ranks"; }
  void on_record(rt::Time t, std::string_view source, std::string_view kind, const nlohmann::json& fields,
                 rt::Severity severity) override;
  CheckResult finish(const RunEnd& end) override;

 private:
  std::set<std::int64_t> dead_;
  std::uint64_t declared_ = 0;
  std::uint64_t routed_ = 0;
  Violations violations_;
};

}  // namespace nvl::emu
