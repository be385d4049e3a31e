#include "emu/check/dead_rank_routing_checker.h"

#include <nlohmann/json.hpp>

namespace nvl::emu {

void DeadRankRoutingChecker::on_record(rt::Time t, std::string_view source, std::string_view kind,
                                       const nlohmann::json& fields, rt::Severity) {
  if (source == "health" && kind == "rank_declared_dead") {
    dead_.insert(fields.at("rank").get<std::int64_t>());
    ++declared_;
  } else if (source == "health" && kind == "rank_back") {
    dead_.erase(fields.at("rank").get<std::int64_t>());
  } else if (source == "router" && kind == "routed" && !dead_.empty()) {
    ++routed_;
    const auto rank = fields.at("rank").get<std::int64_t>();
    if (dead_.contains(rank)) {
      violations_.add("request " + fields.at("request").dump() + " routed to DP rank " + std::to_string(rank) +
                      " at " + rt::to_string(t) + " s, after it was declared dead");
    }
  }
}

CheckResult DeadRankRoutingChecker::finish(const RunEnd&) {
  return violations_.result(std::to_string(declared_) + " rank(s) declared dead; " + std::to_string(routed_) +
                            " request(s) routed while one was, none to it");
}

}  // namespace nvl::emu
