// Pooled KV: the normal GPUs' KV is one pool over NVLink, so the router picks a rank by load alone and
// a prefix held on another rank's GPU is read over NVLink, not recomputed; cache-aware routing follows
// the cache to the busy rank instead.
#include <gtest/gtest.h>

#include "tests/engine/pd_rig.h"

namespace nvl::engine {
namespace pd_pooled_test {

using pd_test::request;
using pd_test::Rig;
using pd_test::options;
using pd_test::RigOptions;

struct Outcome {
  RequestTiming repeat;
  std::int64_t imported_tokens = 0;  // on the rank the repeat ran on
  int fetch_decisions = 0;
};

// Request 1 (a long answer) keeps rank 0 busy and caches its 1,600-token prompt there; request 2
// repeats that prompt while request 1 still decodes.
Outcome repeat_while_busy(const std::string& policy, bool pool, double prefill_efficiency) {
  Rig rig(options([&](RigOptions& o) {
    o.policy = policy;
    o.tweak = [&](PdDeployment& d) {
      d.system.kv_pool = pool;
      d.system.prefill_efficiency = prefill_efficiency;
    };
  }));
  rig.system->submit(request(1, 1'600, 2'000, 9));
  rig.rt.run(rt::RunOptions{.until = rt::Time::zero() + rt::ms(300)});
  EXPECT_TRUE(rig.done.empty()) << "request 1 still decodes";
  rig.system->submit(request(2, 1'600, 4, 9));
  rig.rt.run();
  EXPECT_EQ(rig.tokens[2], 4);
  EXPECT_TRUE(rig.done[2].failure.empty()) << rig.done[2].failure;
  Outcome o;
  o.repeat = rig.done[2];
  o.imported_tokens = rig.system->kv(o.repeat.rank).hit_counts().imported_tokens;
  o.fetch_decisions = rig.log_lines_with({"prefix_fetch_decision", "\"fetch\":true"});
  return o;
}

TEST(PdPooled, RoutesByLoadAloneAndReadsThePrefixFromThePeerGpu) {
  const Outcome pooled = repeat_while_busy("pooled", true, 0.6);
  EXPECT_EQ(pooled.repeat.rank, 1) << "rank 0 is busy: the pool makes its cache no reason to go there";
  EXPECT_EQ(pooled.imported_tokens, 1'600 / 64 * 64) << "the 25 full blocks read over NVLink";
  EXPECT_EQ(pooled.fetch_decisions, 1);
  const Outcome cache_aware = repeat_while_busy("cache_aware", false, 0.6);
  EXPECT_EQ(cache_aware.repeat.rank, 0) << "balanced ranks: cache-aware follows the prefix";
  EXPECT_EQ(cache_aware.imported_tokens, 0);
}

TEST(PdPooled, ThePoolReadsThePrefixEvenWhereTheCostsWouldRecomputeIt) {
  // A prefill rate 10^6 times the GPU's: recomputing 1,600 tokens beats any fetch by the costs alone.
  const Outcome costed = repeat_while_busy("least_load", false, 0.6e6);
  EXPECT_EQ(costed.repeat.rank, 1);
  EXPECT_EQ(costed.imported_tokens, 0);
  EXPECT_EQ(costed.fetch_decisions, 0);
  const Outcome pooled = repeat_while_busy("pooled", true, 0.6e6);
  EXPECT_EQ(pooled.repeat.rank, 1);
  EXPECT_EQ(pooled.imported_tokens, 1'600 / 64 * 64);
}

}  // namespace pd_pooled_test
}  // namespace nvl::engine
