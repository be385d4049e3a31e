// "no_routing_to_dead_ranks": a request routed to a rank between its declaration and its return fails
// the check, naming the request and the rank; routing to it before or after, or to other ranks, passes.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "emu/check/dead_rank_routing_checker.h"
#include "emu/check/run_end.h"

namespace nvl::emu {
namespace dead_rank_routing_checker_test {

rt::Time at_ms(std::int64_t ms) { return rt::Time::zero() + rt::ms(ms); }

void route(DeadRankRoutingChecker& c, std::int64_t ms, int request, int rank) {
  c.on_record(at_ms(ms), "router", "routed", {{"request", request}, {"rank", rank}, {"path", "local"}}, rt::Severity::info);
}

TEST(DeadRankRoutingChecker, PassesWhenNothingGoesToADeadRank) {
  DeadRankRoutingChecker c;
  route(c, 1, 1, 3);  // before the declaration
  c.on_record(at_ms(2), "health", "rank_declared_dead", {{"rank", 3}, {"how", "health_check"}, {"why", "x"}},
              rt::Severity::warning);
  route(c, 3, 2, 4);
  c.on_record(at_ms(4), "health", "rank_back", {{"rank", 3}}, rt::Severity::warning);
  route(c, 5, 3, 3);  // after its return
  const CheckResult r = c.finish(RunEnd{});
  EXPECT_TRUE(r.pass) << r.detail;
  EXPECT_NE(r.detail.find("1 rank(s) declared dead"), std::string::npos) << r.detail;
}

TEST(DeadRankRoutingChecker, FailsNamingTheRequestRoutedToADeadRank) {
  DeadRankRoutingChecker c;
  c.on_record(at_ms(2), "health", "rank_declared_dead", {{"rank", 5}, {"how", "operation_error"}, {"why", "x"}},
              rt::Severity::warning);
  route(c, 3, 17, 5);
  route(c, 4, 18, 5);
  const CheckResult r = c.finish(RunEnd{});
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.detail.find("request 17 routed to DP rank 5"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("1 more"), std::string::npos) << r.detail;
}

}  // namespace dead_rank_routing_checker_test
}  // namespace nvl::emu
