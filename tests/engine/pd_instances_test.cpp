// Several instances in one P/D system: the router numbers the DP ranks of every decoding instance in one
// list and its prefix index follows the cache of a rank in the second instance; long prompts go to the
// prefill instance with the fewest prompt tokens outstanding, so two at once prefill side by side; a
// decode-only instance sends even a short prompt to a prefill instance.
#include <gtest/gtest.h>

#include "tests/engine/pd_rig.h"

namespace nvl::engine {
namespace {

using pd_test::request;
using pd_test::Rig;

// Two decoding instances of 4 ranks (GPUs 0-3 and 4-7) and two TP4 prefill instances (GPUs 64-67, 68-71).
Rig two_by_two(const std::string& policy, LocalPrefill second_instance = LocalPrefill::below_threshold) {
  return Rig(pd_test::options([&](pd_test::RigOptions& o) {
    o.policy = policy;
    o.tweak = [second_instance](PdDeployment& d) {
      std::vector<hal::Device*> decode = d.decode.front().gpus, prefill = d.prefill.front().gpus;
      d.decode.clear();
      d.prefill.clear();
      d.decode.push_back(DecodeInstance{.name = "dep/0", .gpus = {decode.begin(), decode.begin() + 4}, .group = {}});
      d.decode.push_back(DecodeInstance{
          .name = "dep/1", .gpus = {decode.begin() + 4, decode.end()}, .group = {}, .local_prefill = second_instance});
      d.prefill.push_back(PrefillInstance{.name = "prefill/0", .gpus = {prefill.begin(), prefill.begin() + 4}, .worker = {}});
      d.prefill.push_back(PrefillInstance{.name = "prefill/1", .gpus = {prefill.begin() + 4, prefill.end()}, .worker = {}});
    };
  }));
}

TEST(PdInstances, TheRoutersRanksSpanTheInstancesAndItsIndexFollowsTheSecondInstancesCache) {
  Rig rig = two_by_two("round_robin");
  ASSERT_EQ(rig.system->ranks(), 8);
  ASSERT_EQ(rig.system->decode_instances(), 2u);
  for (RequestId id = 1; id <= 8; ++id) rig.system->submit(request(id, 1'000, 4, id));
  rig.rt.run();
  ASSERT_EQ(rig.done.size(), 8u);
  for (const auto& [id, t] : rig.done) EXPECT_TRUE(t.failure.empty()) << id << ": " << t.failure;
  // Round robin: one request per rank, four per instance.
  EXPECT_EQ(rig.system->routed_to_instance(0), 4u);
  EXPECT_EQ(rig.system->routed_to_instance(1), 4u);
  const std::int32_t rank = rig.done[6].rank;
  ASSERT_GE(rank, 4) << "request 6 ran in the second instance";
  EXPECT_EQ(rig.system->local_rank(rank), rank - 4);
  // The rank's KV events name the router's rank, so its prefix index points at that rank (16 blocks of 64).
  const RequestState again = request(9, 1'000, 4, 6);
  EXPECT_EQ(rig.system->router().index().match(again.prompt_hashes)[static_cast<std::size_t>(rank)].gpu_blocks, 15);
  pd_test::expect_kv_returned(rig);
}

TEST(PdInstances, TwoLongPromptsAtOncePrefillSideBySideOnTheTwoPrefillInstances) {
  // Hand estimate: on one TP4 instance the second 20K-token prompt would wait for the first (TTFT about
  // twice the first's); with the least-outstanding choice it goes to the idle instance, and both TTFTs
  // are about one TP4 prefill plus its KV transfer.
  Rig rig = two_by_two("round_robin");
  rig.system->submit(request(1, 20'000, 2, 1));
  rig.system->submit(request(2, 20'000, 2, 2));
  rig.rt.run();
  ASSERT_EQ(rig.done.size(), 2u);
  EXPECT_EQ(rig.system->prefilled_by(0), 1u);
  EXPECT_EQ(rig.system->prefilled_by(1), 1u);
  const double first = (*rig.done[1].first_token - rig.done[1].arrival).seconds();
  const double second = (*rig.done[2].first_token - rig.done[2].arrival).seconds();
  EXPECT_LT(second, 1.3 * first) << "the second prompt did not wait for the first";
  EXPECT_GT(second, 0.7 * first);
}

TEST(PdInstances, ADecodeOnlyInstanceSendsEvenShortPromptsToAPrefillInstance) {
  Rig rig = two_by_two("round_robin", LocalPrefill::never);
  for (RequestId id = 1; id <= 8; ++id) rig.system->submit(request(id, 1'000, 4, id));
  rig.rt.run();
  ASSERT_EQ(rig.done.size(), 8u);
  for (const auto& [id, t] : rig.done) {
    EXPECT_TRUE(t.failure.empty()) << id << ": " << t.failure;
    // Ranks 0-3 are mixed (1,000 tokens is under the threshold: local); ranks 4-7 decode only.
    EXPECT_EQ(t.path, t.rank >= 4 ? PrefillPath::prefill_worker : PrefillPath::local) << id << " on rank " << t.rank;
  }
  EXPECT_EQ(rig.system->routed(PrefillPath::prefill_worker), 4u);
  EXPECT_EQ(rig.system->prefilled_by(0) + rig.system->prefilled_by(1), 4u);
  pd_test::expect_kv_returned(rig);
}

}  // namespace
}  // namespace nvl::engine
