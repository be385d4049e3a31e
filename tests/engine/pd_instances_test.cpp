// Several instances in one P/D system: the router numbers the DP ranks of every decoding instance in one
// list and its prefix index follows the cache of a rank in the second instance; long prompts go to the
// prefill instance with the fewest prompt tokens outstanding, so two at once prefill side by side; a
// decode-only instance sends even a short prompt to a prefill instance; a DEP prefill instance hands its
// prompts to its DP ranks in turn and each prompt's KV leaves from its own rank's GPU; a prefix fetched
// into an attention-TP rank lands on every GPU of the rank.
#include <cmath>

#include <gtest/gtest.h>

#include "tests/engine/pd_rig.h"

namespace nvl::engine {
namespace pd_instances_test {

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

TEST(PdInstances, ADepPrefillInstanceRunsEachPromptOnOneDpRankAndPushesItsKvFromThatRanksGpu) {
  // One DEP4 prefill instance on GPUs 64-67 (four DP ranks of one GPU, EP4).
  Rig rig(pd_test::options([](pd_test::RigOptions& o) {
    o.policy = "round_robin";
    o.tweak = [](PdDeployment& d) {
      std::vector<hal::Device*> prefill = d.prefill.front().gpus;
      d.prefill.front().gpus.assign(prefill.begin(), prefill.begin() + 4);
      d.prefill.front().worker.attention_dp = 4;
      d.prefill.front().worker.expert_parallel = true;
    };
  }));
  rig.system->submit(request(1, 20'000, 2, 1));
  rig.system->submit(request(2, 20'000, 2, 2));
  rig.rt.run();
  ASSERT_EQ(rig.done.size(), 2u);
  for (const auto& [id, t] : rig.done) EXPECT_TRUE(t.failure.empty()) << id << ": " << t.failure;
  const PrefillWorker& worker = rig.system->prefill(0);
  ASSERT_EQ(worker.ranks(), 4);
  EXPECT_EQ(worker.prefilled(0), 1u);
  EXPECT_EQ(worker.prefilled(1), 1u);
  EXPECT_EQ(worker.prefilled(2) + worker.prefilled(3), 0u);
  // Each prompt's KV (20,000 tokens x 35,136 B, none held at the decode ranks) leaves over the CX8 of
  // its rank's GPU, 64 and 65, as wire bytes at the profile's RDMA efficiency (0.9025, gb300-nvl72.json);
  // the NICs of 66 and 67 carry none of it.
  const fabric::Fabric& fabric = rig.cluster.fabric();
  const auto nic_tx = [&](int gpu) {
    return fabric.carried_bytes(fabric.topology().nic(fabric.topology().gpu(gpu).nic).tx);
  };
  const double kv = 20'000.0 * pd_test::kKvBytesPerToken / 0.9025;
  EXPECT_NEAR(nic_tx(64), kv, 0.01 * kv);
  EXPECT_NEAR(nic_tx(65), kv, 0.01 * kv);
  EXPECT_EQ(nic_tx(66), 0.0);
  EXPECT_EQ(nic_tx(67), 0.0);
  pd_test::expect_kv_returned(rig);
}

TEST(PdInstances, APrefixFetchedIntoAnAttentionTpRankLandsOnEachOfItsGpus) {
  // Four DP ranks of TP2 on GPUs 0-7; round robin sends the second request of the same chain to rank 1,
  // which fetches the 15 blocks rank 0 holds (1,000 tokens: 15 whole blocks of 64) instead of
  // recomputing them.
  Rig rig(pd_test::options([](pd_test::RigOptions& o) {
    o.policy = "round_robin";
    o.tweak = [](PdDeployment& d) { d.decode.front().group.attention_tp = 2; };
  }));
  rig.system->submit(request(1, 1'000, 2, 7));
  rig.rt.run();
  // The fetch's copies, one per GPU of rank 1 (the EP traffic on the same links is not told apart by
  // link bytes: every layer's all-to-all counts there).
  std::vector<std::pair<std::string, std::uint64_t>> fetches;
  rig.cluster.fabric().set_transfer_observer([&](const fabric::TransferSpan& span) {
    if (span.op.starts_with("rdma write kv.fetch.req2") && span.ok) fetches.emplace_back(std::string(span.op), span.bytes);
  });
  rig.system->submit(request(2, 1'000, 2, 7));
  rig.rt.run();
  ASSERT_EQ(rig.done.size(), 2u);
  ASSERT_EQ(rig.done[2].rank, 1);
  EXPECT_EQ(rig.system->kv(1).hit_counts().imported_tokens, 15 * 64);
  // MLA: each TP rank holds the whole latent, so GPUs 2 and 3 each receive the 15 x 64 x 35,136 B =
  // 33.7 MB over NVLink.
  const std::uint64_t prefix = 15 * 64 * static_cast<std::uint64_t>(pd_test::kKvBytesPerToken);
  ASSERT_EQ(fetches.size(), 2u);
  std::sort(fetches.begin(), fetches.end());
  EXPECT_EQ(fetches[0], std::make_pair(std::string("rdma write kv.fetch.req2.tp0"), prefix));
  EXPECT_EQ(fetches[1], std::make_pair(std::string("rdma write kv.fetch.req2.tp1"), prefix));
  const fabric::Fabric& fabric = rig.cluster.fabric();
  EXPECT_GT(fabric.carried_bytes(fabric.topology().gpu(3).nvl_down), static_cast<double>(prefix));
  pd_test::expect_kv_returned(rig);
}

}  // namespace pd_instances_test
}  // namespace nvl::engine
