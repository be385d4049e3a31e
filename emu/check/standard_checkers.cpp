#include "emu/check/standard_checkers.h"

#include "emu/check/dead_rank_routing_checker.h"
#include "emu/check/error_event_checker.h"
#include "emu/check/request_accounting_checker.h"
#include "emu/check/resource_baseline_checker.h"
#include "emu/check/token_delivery_checker.h"

namespace nvl::emu {

std::vector<std::unique_ptr<RunChecker>> make_standard_checkers() {
  std::vector<std::unique_ptr<RunChecker>> out;
  out.push_back(std::make_unique<RequestAccountingChecker>());
  out.push_back(std::make_unique<TokenDeliveryChecker>());
  out.push_back(std::make_unique<ResourceBaselineChecker>());
  out.push_back(std::make_unique<ErrorEventChecker>());
  out.push_back(std::make_unique<DeadRankRoutingChecker>());
  return out;
}

}  // namespace nvl::emu
