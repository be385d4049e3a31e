// Attention TP inside the DP ranks of the normal worker group: DeepSeek-V3 as DP4 x TP2 on 8 GB300s
// serves requests and holds the KV a hand estimate says, its decode steps compare with DP8 x TP1 on the
// same GPUs as the estimate says, a TP that does not divide the heads is rejected, and a lost GPU of a
// TP2 rank takes that whole DP rank out while the others go on.
#include <cmath>
#include <map>
#include <optional>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "emu/cluster/emulated_cluster.h"
#include "emu/rt/virtual_runtime.h"
#include "engine/worker/normal_worker_group.h"
#include "tests/engine/decode_step_time.h"
#include "tests/engine/step_outcomes_rig.h"
#include "tests/engine/test_request.h"

namespace nvl::engine {
namespace attention_tp_test {

using test::request;

// A DeepSeek-V3 normal group over 8 GB300s with attention TP `tp`, and what it delivered.
struct Rig {
  explicit Rig(std::int64_t tp, NormalGroupConfig cfg = {}, int gpus = 8)
      : cluster(rt, "gb300", "gb300-nvl72", gpus), model(load_model_profile(model_profile_path("deepseek-v3"))) {
    cfg.attention_tp = tp;
    cfg.activation_reserve_bytes = 20'000'000'000;
    group.emplace(
        rt, model, cluster.devices(0, gpus), cluster.collectives(), cfg,
        [this](std::int32_t rank, const StepOutcome& o) {
          tokens[o.id] += o.new_output_tokens;
          rank_of[o.id] = rank;
          if (o.first_token) first[o.id] = rt.now();
          if (o.finished) finished[o.id] = rt.now();
        },
        [](std::int32_t, RequestId id, const std::string& why) { ADD_FAILURE() << "rejected " << id << ": " << why; });
  }
  // `per_gpu` requests for each GPU, handed to its DP rank with their KV in place (as after a P/D
  // transfer), so every request decodes from the first step on.
  void decode_from(int per_gpu, std::int64_t context, std::int64_t output) {
    RequestId id = 1;
    for (std::int32_t r = 0; r < group->ranks(); ++r) {
      for (std::int64_t k = 0; k < per_gpu * group->attention_tp(); ++k, ++id) {
        ASSERT_TRUE(group->receive(r, request(id, context, output)).has_value());
        group->received(r, id);
      }
    }
  }
  // Mean decode step time: every request decodes in every step from its first token to its last.
  double step_ms(std::int64_t output) const { return test::mean_step_ms(first, finished, output); }

  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster;
  ModelProfile model;
  std::optional<NormalWorkerGroup> group;
  std::map<RequestId, std::int64_t> tokens;
  std::map<RequestId, std::int32_t> rank_of;
  std::map<RequestId, rt::Time> first, finished;
};

TEST(AttentionTp, Dp4Tp2ServesEveryRequestAndHoldsOneGpusKvPerRank) {
  std::uint64_t tp2_weights = 0, tp2_kv = 0, block = 0;
  {
    Rig tp2(2);
    NormalWorkerGroup& g = *tp2.group;
    ASSERT_EQ(g.ranks(), 4);
    EXPECT_EQ(g.attention_tp(), 2);
    EXPECT_EQ(g.device_of(1), 2);
    EXPECT_EQ(g.devices_of(1), (std::vector<hal::DeviceId>{2, 3}));
    g.start();
    // Two requests per GPU: rank r holds four, both of its GPUs run all four.
    for (RequestId id = 1; id <= 16; ++id) {
      g.submit(static_cast<std::int32_t>((id - 1) / 4), request(id, 1'000 + 50 * static_cast<std::int64_t>(id), 20));
    }
    tp2.rt.run();
    for (RequestId id = 1; id <= 16; ++id) {
      EXPECT_EQ(tp2.tokens[id], 20) << id;
      EXPECT_LT(tp2.first.at(id), tp2.finished.at(id));
    }
    EXPECT_EQ(g.steps(), 20u);  // one prefill step, then 19 decode steps
    for (std::int32_t r = 0; r < g.ranks(); ++r) {
      EXPECT_TRUE(g.scheduler(r).idle());
      EXPECT_EQ(g.kv(r).gpu().used_blocks(), 0) << "rank " << r;
      g.kv(r).check_invariants();
    }
    // MLA's latent is replicated over the TP ranks: each GPU holds whole blocks.
    EXPECT_EQ(g.gpu_block_bytes(), g.block_bytes());
    tp2_weights = g.weights().total_bytes();
    tp2_kv = g.kv_bytes_per_rank();
    block = g.block_bytes();
  }
  // By hand, DeepSeek-V3 FP8 per GPU at TP2 / EP8: attention 61 x 187M params / 2 = 5.7 GB; routed
  // experts 58 layers x 32 x 44M = 81.7 GB; shared experts 58 x 44M / 2 = 1.3 GB and routers 0.2 GB;
  // dense FFN 3 x 396M / 2 = 0.6 GB; embedding and LM head 2 x 129,280 x 7,168 x BF16 / 2 = 1.9 GB;
  // the MTP layer 1.6 GB: about 93 GB. KV per GPU = 279 GB usable - 93 GB - 20 GB reserve = 166 GB,
  // and that is the rank's: one copy of each request's KV on each of its GPUs.
  EXPECT_NEAR(static_cast<double>(tp2_weights) / 1e9, 93.0, 1.5);
  EXPECT_NEAR(static_cast<double>(tp2_kv) / 1e9, 166.0, 1.5);

  // Against DP8 on the same GPUs: each GPU holds the TP2-split parts whole (5.7 + 1.3 + 0.6 + 1.9 +
  // ~0.1 GB more: about 9.6 GB), which is exactly what its KV is smaller by.
  Rig dp8(1);
  const double more_weights =
      static_cast<double>(dp8.group->weights().total_bytes()) - static_cast<double>(tp2_weights);
  EXPECT_NEAR(more_weights / 1e9, 9.6, 0.5);
  EXPECT_NEAR(static_cast<double>(tp2_kv) - static_cast<double>(dp8.group->kv_bytes_per_rank()), more_weights,
              static_cast<double>(block));
}

TEST(AttentionTp, DecodeStepAgainstDp8OnTheSameGpusAndLoad) {
  // Four requests per GPU at 1K context, then sixteen at 32K: DP8 runs them as 4 (16) per rank, DP4 x
  // TP2 as 8 (32) per rank with half the heads on each GPU. Estimate per GPU and decode step (8 TB/s):
  // - routed experts: the same (each GPU dispatches the same tokens to the same 32 experts);
  // - weights read: TP2 halves q_b, the absorbed q/o, o_proj (86 MB a layer of 187), the shared expert,
  //   dense FFN and LM head: about 7.5 GB less, -0.9 ms;
  // - KV read: each GPU reads its rank's whole latent, twice DP8's: 1K: 4 x 1K x 576 B x 61 = +0.14 GB
  //   (+0.02 ms); 32K: 16 x 32K x 576 B x 61 = +18.4 GB (+2.3 ms);
  // - attention FLOPs: twice the sequences over half the heads, the same;
  // - added: two TP all-reduces per layer (attention, MoE), 122 a step of 8 (32) tokens x 7,168 x BF16,
  //   latency-bound on NVLink at these sizes (5 us launch + 1 us a ring step, ~7 us each): +0.85 ms.
  // So at 1K the two are within about a millisecond of each other (the saved weights and the
  // all-reduces about cancel), and at 32K TP2 is slower by about 2 ms (0.9 ms saved, ~3 ms added).
  const auto step = [](std::int64_t tp, int per_gpu, std::int64_t context) {
    Rig rig(tp);
    rig.group->start();
    rig.decode_from(per_gpu, context, 10);
    rig.rt.run();
    EXPECT_EQ(rig.finished.size(), static_cast<std::size_t>(8 * per_gpu));
    return rig.step_ms(10);
  };
  const double dp8_short = step(1, 4, 1'000), tp2_short = step(2, 4, 1'000);
  const double dp8_long = step(1, 16, 32'000), tp2_long = step(2, 16, 32'000);
  EXPECT_LT(std::abs(tp2_short - dp8_short), 1.0) << "1K: DP8 " << dp8_short << " ms, TP2 " << tp2_short << " ms";
  EXPECT_GT(tp2_long - dp8_long, 1.0) << "32K: DP8 " << dp8_long << " ms, TP2 " << tp2_long << " ms";
  EXPECT_LT(tp2_long - dp8_long, 4.0) << "32K: DP8 " << dp8_long << " ms, TP2 " << tp2_long << " ms";
}

TEST(AttentionTp, ATpThatDoesNotDivideTheHeadsIsRejected) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 6);
  const ModelProfile model = load_model_profile(model_profile_path("glm-5"));
  NormalGroupConfig cfg;
  cfg.attention_tp = 3;
  try {
    NormalWorkerGroup group(rt, model, cluster.devices(0, 6), cluster.collectives(), cfg,
                            [](std::int32_t, const StepOutcome&) {}, [](std::int32_t, RequestId, const std::string&) {});
    FAIL() << "TP3 over GLM-5's 64 heads should be rejected";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("attention TP 3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("64 attention heads"), std::string::npos) << msg;
  }
  cfg.attention_tp = 4;  // 6 GPUs do not make DP ranks of 4
  EXPECT_THROW(NormalWorkerGroup(rt, model, cluster.devices(0, 6), cluster.collectives(), cfg,
                                 [](std::int32_t, const StepOutcome&) {}, [](std::int32_t, RequestId, const std::string&) {}),
               std::invalid_argument);
}

TEST(AttentionTp, ALostGpuOfATp2RankTakesTheWholeRankOut) {
  Rig rig(2);
  NormalWorkerGroup& g = *rig.group;
  std::vector<nlohmann::json> replaced, rebuilt;
  rig.rt.log().set_observer([&](rt::Time, std::string_view source, std::string_view kind, const nlohmann::json& f,
                                rt::Severity) {
    if (source == "eplb" && kind == "experts_replaced") replaced.push_back(f);
    if (source == "normal-group" && kind == "ep_group_rebuilt") rebuilt.push_back(f);
  });
  std::vector<std::int32_t> blamed;
  std::vector<RequestState> taken;
  g.on_step_failure([&](std::int32_t rank, const hal::HalError&) {
    blamed.push_back(rank);
    g.remove_rank(rank, "GPU lost", [&](std::vector<RequestState> requests) { taken = std::move(requests); });
  });
  g.start();
  for (RequestId id = 1; id <= 16; ++id) g.submit(static_cast<std::int32_t>((id - 1) / 4), request(id, 1'000, 200));
  // GPU 3 is rank 1's second TP rank.
  rig.rt.call_after(rt::ms(100), [&] { rig.cluster.fleet().device(3).inject_gpu_lost(); });
  rig.rt.run();

  EXPECT_EQ(blamed, (std::vector<std::int32_t>{1}));
  EXPECT_FALSE(g.live(1));
  EXPECT_EQ(g.live_ranks(), 3);
  // Its four requests come back mid-decode, to continue elsewhere; the other ranks finish theirs.
  ASSERT_EQ(taken.size(), 4u);
  for (const RequestState& r : taken) EXPECT_GT(r.id, 4u);
  for (RequestId id = 1; id <= 16; ++id) {
    if (id >= 5 && id <= 8) continue;
    EXPECT_EQ(rig.tokens[id], 200) << id;
  }
  // Both of its GPUs left the EP group: 6 members over the 3 ranks left.
  ASSERT_EQ(replaced.size(), 1u);
  EXPECT_EQ(replaced[0]["ep_ranks"], 6);
  ASSERT_FALSE(rebuilt.empty());
  EXPECT_EQ(rebuilt.back()["ranks"], 3);
}

TEST(AttentionTp, ARankWhoseGpuWasResetRejoinsWithBothGpus) {
  Rig rig(2);
  NormalWorkerGroup& g = *rig.group;
  std::vector<nlohmann::json> restored, rebuilt;
  rig.rt.log().set_observer([&](rt::Time, std::string_view source, std::string_view kind, const nlohmann::json& f,
                                rt::Severity) {
    if (source == "normal-group" && kind == "rank_restored") restored.push_back(f);
    if (source == "normal-group" && kind == "ep_group_rebuilt") rebuilt.push_back(f);
  });
  g.on_step_failure([&](std::int32_t rank, const hal::HalError&) {
    g.remove_rank(rank, "ECC error", [&, rank](std::vector<RequestState> requests) {
      // Its requests continue on rank 0; the GPU comes back after a reset, and the rank with it.
      for (RequestState& r : requests) g.submit(0, std::move(r));
      rig.rt.call_after(rt::ms(50), [&, rank] {
        rig.cluster.fleet().device(2).reset();
        g.restore_rank(rank);  // applies when the running step (a prefill of the moved requests) ends
        rig.rt.call_after(rt::sec(1), [&, rank] {
          for (RequestId id = 101; id <= 104; ++id) g.submit(rank, request(id, 1'000, 20));
        });
      });
    });
  });
  g.start();
  for (RequestId id = 1; id <= 16; ++id) g.submit(static_cast<std::int32_t>((id - 1) / 4), request(id, 1'000, 100));
  // GPU 2 is rank 1's first TP rank.
  rig.rt.call_after(rt::ms(100), [&] { rig.cluster.fleet().device(2).inject_ecc_error(); });
  rig.rt.run();

  EXPECT_TRUE(g.live(1));
  EXPECT_EQ(g.live_ranks(), 4);
  for (RequestId id = 1; id <= 16; ++id) EXPECT_EQ(rig.tokens[id], 100) << id;
  for (RequestId id = 101; id <= 104; ++id) {
    EXPECT_EQ(rig.tokens[id], 20) << id;
    EXPECT_EQ(rig.rank_of[id], 1) << id;
  }
  ASSERT_EQ(restored.size(), 1u);
  EXPECT_EQ(restored[0]["ep_ranks"], 8);
  EXPECT_EQ(rebuilt.back()["ranks"], 4);
}

TEST(AttentionTp, GqaKvHeadsSplitOverTheTpRanks) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 4);
  const ModelProfile model = load_model_profile(model_profile_path("glm-4.5"));
  NormalGroupConfig cfg;
  cfg.attention_tp = 2;
  NormalWorkerGroup group(rt, model, cluster.devices(0, 4), cluster.collectives(), cfg,
                          [](std::int32_t, const StepOutcome&) {}, [](std::int32_t, RequestId, const std::string&) {});
  // GLM-4.5's 8 KV heads over TP2: each GPU holds 4 of them, half of every block, so a rank holds
  // twice the KV one GPU has room for.
  EXPECT_EQ(group.gpu_block_bytes() * 2, group.block_bytes());
  const hal::Memory& hbm = cluster.fleet().device(0).memory();
  EXPECT_EQ(group.kv_bytes_per_rank(), 2 * (hbm.used_bytes() - group.weights().total_bytes()));
  // The KV took all the HBM left beside the weights and the reserve.
  EXPECT_LT(hbm.free_bytes() - group.activation_reserve_bytes(), group.gpu_block_bytes());
}

TEST(AttentionTp, EachGpuOfARankKeepsItsGraceCopy) {
  NormalGroupConfig cfg;
  cfg.grace_policy = GraceTierPolicy::write_through;
  cfg.grace_bytes_per_rank = 20'000'000'000;
  Rig rig(2, cfg);
  NormalWorkerGroup& g = *rig.group;
  // The whole latent on each GPU, so each GPU's Grace holds the rank's whole Grace tier.
  const std::uint64_t grace = static_cast<std::uint64_t>(g.kv(0).grace().capacity()) * g.gpu_block_bytes();
  EXPECT_GT(grace, 19'000'000'000u);
  for (hal::DeviceId d : g.devices_of(0)) EXPECT_GE(rig.cluster.fleet().device(d).host_memory().used_bytes(), grace);
  g.start();
  for (RequestId id = 1; id <= 8; ++id) g.submit(static_cast<std::int32_t>((id - 1) / 2), request(id, 2'000, 10));
  rig.rt.run();
  for (RequestId id = 1; id <= 8; ++id) EXPECT_EQ(rig.tokens[id], 10) << id;
  // Written through as the prompts' blocks were published: 31 full blocks of each 2,000-token prompt.
  for (std::int32_t r = 0; r < g.ranks(); ++r) EXPECT_EQ(g.kv(r).grace().cached_blocks(), 2 * 31) << r;
}

TEST(AttentionTp, TwoBatchOverlapAndEplbRunWithTp2) {
  NormalGroupConfig cfg;
  cfg.two_batch_overlap = true;
  cfg.redundant_experts = 8;
  cfg.eplb_interval_steps = 3;
  Rig rig(2, cfg);
  draw_outcomes(rig.cluster, rig.rt, 0, 8, {.expert_skew = 0.6, .drift_interval = rt::ms(20), .drift_fraction = 0.5});
  std::int64_t rebalances = 0;
  rig.rt.log().set_observer([&](rt::Time, std::string_view source, std::string_view kind, const nlohmann::json&,
                                rt::Severity) { rebalances += source == "eplb" && kind == "rebalanced" ? 1 : 0; });
  rig.group->start();
  // Long prompts make the first steps prefill-heavy, so they run as two micro-batches.
  for (RequestId id = 1; id <= 16; ++id) {
    rig.group->submit(static_cast<std::int32_t>((id - 1) / 4), request(id, 8'000, 8));
  }
  rig.rt.run();
  for (RequestId id = 1; id <= 16; ++id) EXPECT_EQ(rig.tokens[id], 8) << id;
  EXPECT_GT(rebalances, 0);
}

}  // namespace attention_tp_test
}  // namespace nvl::engine
