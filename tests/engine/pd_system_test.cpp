// The P/D system on an emulated GB300 NVL72: threshold routing, KV moved layer group by layer group
// while the prefill runs, the moved bytes equal to the prompt's KV, and a repeated prompt served from
// the decode rank's cache.
#include <gtest/gtest.h>

#include "tests/engine/pd_rig.h"

namespace nvl::engine {
namespace pd_system_test {

using pd_test::request;
using pd_test::Rig;

TEST(PdSystem, ShortPromptsStayLocalLongOnesMoveTheirKvLayerByLayer) {
  Rig rig;
  rig.system->submit(request(1, 1'000, 8, 1));
  rig.system->submit(request(2, 20'000, 8, 2));
  rig.rt.run();
  ASSERT_EQ(rig.done.size(), 2u);
  for (RequestId id : {1, 2}) {
    EXPECT_EQ(rig.tokens[id], 8) << id;
    EXPECT_TRUE(rig.done[id].failure.empty()) << rig.done[id].failure;
  }
  EXPECT_EQ(rig.done[1].path, PrefillPath::local);
  const RequestTiming& t = rig.done[2];
  ASSERT_EQ(t.path, PrefillPath::prefill_worker);
  // One copy of the prompt's KV: 576 FP8 bytes per token and layer (REFERENCE.md §2) over 61 layers.
  const std::uint64_t kv_bytes = 20'000ULL * 35'136ULL;
  EXPECT_EQ(t.transfer_bytes, kv_bytes);
  EXPECT_EQ(rig.system->transfer_bytes(), kv_bytes);
  ASSERT_TRUE(t.prefill_done && t.kv_arrived && t.first_token);
  // Pushed while later layers ran: what is left after the prefill is far less than a whole transfer
  // over the receiving GPU's 100 GB/s CX8 (REFERENCE.md §1.1).
  const double whole_transfer_s = static_cast<double>(kv_bytes) / 100e9;
  EXPECT_LT((*t.kv_arrived - *t.prefill_done).seconds(), 0.5 * whole_transfer_s);
  EXPECT_LT((*t.first_token - t.arrival).seconds(), (*t.prefill_done - t.arrival).seconds() + whole_transfer_s);
  // The prefill worker held the prompt's KV until the last push landed, then let it go.
  EXPECT_EQ(rig.system->prefill(0).scheduler().held(), 0u);
  EXPECT_EQ(rig.system->prefill(0).kv().gpu().used_blocks(), 0);
}

TEST(PdSystem, ARepeatedLongPromptIsServedFromTheDecodeRanksCache) {
  Rig rig;
  rig.system->submit(request(1, 20'000, 4, 7));
  rig.rt.run();
  rig.system->submit(request(2, 20'000, 4, 7));
  rig.rt.run();
  ASSERT_EQ(rig.done.size(), 2u);
  const RequestTiming& again = rig.done[2];
  EXPECT_EQ(again.path, PrefillPath::local) << "the cached prefix leaves fewer uncached tokens than the threshold";
  EXPECT_EQ(again.rank, rig.done[1].rank) << "cache-aware: the rank that holds it";
  EXPECT_GE(again.cached_tokens, 19'900);
  EXPECT_EQ(rig.tokens[2], 4);
  EXPECT_EQ(rig.system->router().routed(PrefillPath::prefill_worker), 1u);
}

TEST(PdSystem, APrefixOnAnotherRanksGpuIsFetchedOverNvlinkRatherThanRecomputed) {
  Rig rig("round_robin");
  const RequestState first = request(1, 1'600, 2, 9);
  rig.system->submit(first);  // rank 0 computes and caches it
  rig.rt.run();
  rig.system->submit(request(2, 1'600, 2, 9));  // round-robin sends the repeat to rank 1
  rig.rt.run();
  ASSERT_EQ(rig.done.size(), 2u);
  EXPECT_EQ(rig.done[2].rank, 1);
  EXPECT_EQ(rig.tokens[2], 2);
  // Rank 0 published all 25 full blocks of the prompt: 1,600 tokens x 35,136 B over NVLink take ~0.1 ms;
  // recomputing them on a GB300 at 60% of 5 PFLOPS FP8, 2 x 37B FLOPs a token, ~40 ms: fetched.
  EXPECT_EQ(rig.system->kv(1).gpu().match_length(first.prompt_hashes), 25);
  bool fetched = false;
  for (const auto& line : rig.rt.log().lines()) {
    if (line.find("prefix_fetch_decision") != std::string::npos && line.find("\"fetch\":true") != std::string::npos) {
      fetched = true;
    }
  }
  EXPECT_TRUE(fetched);
}

TEST(PdSystem, ALongPromptCachedOnlyElsewhereGoesToThePrefillWorkerWhenNotFetched) {
  for (const bool fetch : {true, false}) {
    Rig rig("round_robin", fetch);
    rig.system->submit(request(1, 20'000, 2, 5));  // prefilled by the prefill worker, cached on rank 0
    rig.rt.run();
    rig.system->submit(request(2, 20'000, 2, 5));  // round-robin: rank 1, which holds none of it
    rig.rt.run();
    ASSERT_EQ(rig.done.size(), 2u);
    EXPECT_EQ(rig.done[2].rank, 1);
    EXPECT_EQ(rig.done[2].path, fetch ? PrefillPath::local : PrefillPath::prefill_worker)
        << "fetch " << fetch << ": without the fetch, rank 1 would prefill 20,000 tokens itself";
    EXPECT_EQ(rig.tokens[2], 2);
  }
}

TEST(PdSystem, ThePrefillWorkerReadsTheDecodeRanksPrefixInsteadOfRecomputingIt) {
  Rig rig;
  rig.system->submit(request(1, 20'000, 2, 4));
  rig.rt.run();
  // The same conversation, 10,000 tokens longer: the decode rank holds the first 20,000.
  RequestState longer = request(2, 30'000, 2, 4);
  rig.system->submit(longer);
  rig.rt.run();
  ASSERT_EQ(rig.done.size(), 2u);
  const RequestTiming& first = rig.done[1];
  const RequestTiming& second = rig.done[2];
  ASSERT_EQ(second.path, PrefillPath::prefill_worker);
  EXPECT_EQ(second.rank, first.rank);
  // 10,000 new tokens over a 20,000-token prefix cost less than 20,000 from scratch (recomputing all
  // 30,000 would cost more).
  EXPECT_LT((*second.prefill_done - second.routed).seconds(), (*first.prefill_done - first.routed).seconds());
  // Only what the decode rank lacks comes back: it held 312 full 64-token blocks (19,968 tokens).
  EXPECT_EQ(second.transfer_bytes, (30'000ULL - 312 * 64) * 35'136ULL);
}

TEST(PdSystem, KvEventsReachTheRouterAsMessagesOverTheHostNetwork) {
  Rig rig("cache_aware", true, true);
  rig.system->submit(request(1, 20'000, 4, 7));
  rig.rt.run();
  EXPECT_GT(rig.network.delivered(), 0u);
  EXPECT_GE(rig.system->router().index().blocks_indexed(), 312u) << "the 312 full blocks of the prompt";
  rig.system->submit(request(2, 20'000, 4, 7));
  rig.rt.run();
  EXPECT_EQ(rig.done[2].path, PrefillPath::local);
  EXPECT_EQ(rig.done[2].rank, rig.done[1].rank);
  EXPECT_EQ(rig.tokens[2], 4);
}

}  // namespace pd_system_test
}  // namespace nvl::engine
