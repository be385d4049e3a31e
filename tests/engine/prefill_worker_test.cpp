// The prefill worker on an emulated GB300 rack slice (TP8, TP8 + EP8, and DEP8: eight DP attention
// ranks with EP8): requests finish at their first token after chunked prefill, layer-wise KV readiness
// fires in layer order during the final chunk, KV drains, and impossible deployments are clear errors.
#include <vector>

#include <gtest/gtest.h>

#include "emu/cluster/emulated_cluster.h"
#include "emu/rt/virtual_runtime.h"
#include "engine/hal/hal_error.h"
#include "engine/worker/prefill_worker.h"

namespace nvl::engine {
namespace prefill_worker_test {

RequestState request(RequestId id, std::int64_t prompt) {
  RequestState r;
  r.id = id;
  r.prompt_tokens = prompt;
  r.max_output_tokens = 50;  // the prefill worker ignores it: one token, then the request is done
  return r;
}

struct KvReady {
  RequestId id;
  std::int64_t layers_done, total_layers;
  std::uint64_t bytes;
  rt::Time at;
};

struct PrefillRun {
  std::vector<KvReady> ready;
  std::vector<std::pair<StepOutcome, rt::Time>> done;
  std::uint64_t steps = 0;
  std::vector<std::uint64_t> prefilled_per_rank;
};

double last_done_s(const PrefillRun& run) { return run.done.back().second.since_start().seconds(); }

PrefillWorkerConfig tp8_ep8() {
  PrefillWorkerConfig cfg;
  cfg.expert_parallel = true;
  return cfg;
}

PrefillWorkerConfig dep8() {
  PrefillWorkerConfig cfg = tp8_ep8();
  cfg.attention_dp = 8;
  return cfg;
}

PrefillRun prefill(const std::string& gpu, const std::string& fabric, PrefillWorkerConfig cfg, std::vector<std::int64_t> prompts,
                   const std::string& model_name = "deepseek-v3") {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, gpu, fabric, 8);
  const ModelProfile model = load_model_profile(model_profile_path(model_name));
  PrefillRun run;
  PrefillWorker worker(
      rt, model, cluster.devices(0, 8), cluster.collectives(), cfg,
      [&](const StepOutcome& o) { run.done.emplace_back(o, rt.now()); },
      [&](RequestId id, std::int64_t done, std::int64_t total, std::uint64_t bytes) {
        run.ready.push_back(KvReady{id, done, total, bytes, rt.now()});
      },
      [](RequestId id, const std::string& why) { ADD_FAILURE() << "rejected " << id << ": " << why; });
  worker.start();
  // Prompt i to DP rank i mod dp, as the prefill instance dispatches them (round-robin).
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    worker.submit(static_cast<std::int32_t>(i % static_cast<std::size_t>(worker.ranks())), request(i + 1, prompts[i]));
  }
  rt.run();
  run.steps = worker.steps();
  for (std::int32_t r = 0; r < worker.ranks(); ++r) {
    EXPECT_TRUE(worker.scheduler(r).idle());
    EXPECT_EQ(worker.kv(r).gpu().used_blocks(), 0);
    worker.kv(r).check_invariants();
    run.prefilled_per_rank.push_back(worker.prefilled(r));
  }
  return run;
}

TEST(PrefillWorker, ChunkedPrefillFinishesAtTheFirstTokenWithLayerWiseKv) {
  PrefillWorkerConfig cfg;
  cfg.scheduler.chunk_tokens = 16'384;
  cfg.scheduler.token_budget = 16'384;
  // 40,000 tokens in chunks of 16,384: 16,384 + 16,384 + 7,232, three steps.
  const PrefillRun run = prefill("gb300", "gb300-nvl72", cfg, {40'000});
  EXPECT_EQ(run.steps, 3u);
  ASSERT_EQ(run.done.size(), 1u);
  EXPECT_TRUE(run.done[0].first.first_token);
  EXPECT_TRUE(run.done[0].first.finished);
  EXPECT_EQ(run.done[0].first.new_output_tokens, 1);
  // DeepSeek-V3's 61 layers in 4 groups end at layers 15, 30, 45, 61; FP8 MLA KV is 576 B per token
  // and layer (kv_lora 512 + rope 64), so the first n layers of 40,000 tokens are 40,000 x 576 x n bytes.
  ASSERT_EQ(run.ready.size(), 4u);
  const std::int64_t ends[] = {15, 30, 45, 61};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(run.ready[i].id, 1u);
    EXPECT_EQ(run.ready[i].layers_done, ends[i]);
    EXPECT_EQ(run.ready[i].total_layers, 61);
    EXPECT_EQ(run.ready[i].bytes, 40'000ull * 576 * static_cast<std::uint64_t>(ends[i]));
    if (i > 0) {
      EXPECT_GT(run.ready[i].at, run.ready[i - 1].at);
    }
  }
  EXPECT_LE(run.ready.back().at, run.done[0].second);
  // The groups hold 15 layers each (16 the last): the middle two, all MoE layers of the same chunk,
  // take the same time to within the graph-launch overhead, and the first KV is ready well before the end.
  const double g2 = (run.ready[1].at - run.ready[0].at).seconds(), g3 = (run.ready[2].at - run.ready[1].at).seconds();
  EXPECT_NEAR(g2 / g3, 1.0, 0.01);
  const double chunk = (run.ready[3].at - run.ready[0].at).seconds() + g2;  // about the whole final chunk
  EXPECT_LT((run.done[0].second - run.ready[0].at).seconds(), 0.85 * chunk);
}

TEST(PrefillWorker, IndexShareLayersWriteNoIndexerKeys) {
  const PrefillRun run = prefill("gb300", "gb300-nvl72", PrefillWorkerConfig{}, {4'000}, "glm-5.2");
  // GLM-5.2's 78 layers in 4 groups end at layers 19, 39, 58, 78, holding 7, 12, 16 and 21 indexers
  // (0, 1, 2, then 6, 10, ...). FP8: 576 B of latent a layer, 132 B of indexer key an indexer:
  // 19 x 576 + 7 x 132 = 11,868; 39 x 576 + 12 x 132 = 24,048; 58 x 576 + 16 x 132 = 35,520;
  // 78 x 576 + 21 x 132 = 47,700 B per token.
  ASSERT_EQ(run.ready.size(), 4u);
  const std::uint64_t per_token[] = {11'868, 24'048, 35'520, 47'700};
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(run.ready[i].bytes, 4'000 * per_token[i]) << i;
}

TEST(PrefillWorker, PrefillTimeFollowsTheComputeRoofline) {
  PrefillWorkerConfig cfg;
  const PrefillRun run = prefill("gb300", "gb300-nvl72", cfg, {16'384});
  ASSERT_EQ(run.done.size(), 1u);
  // The floor at peak: 2 FLOPs per active parameter per token (37e9, DeepSeek-V3) at 5 PFLOPS FP8, plus
  // causal MHA-form attention, 16,384^2 / 2 query-key pairs x 128 heads x (192 + 128) x 2 FLOPs x 61
  // layers at 2.5 PFLOPS BF16, over 8 B300s. Efficiencies and the 122 TP all-reduces keep it within 3x.
  const double floor_s = 2 * 37e9 * 16'384 / (8 * 5e15) + 16'384.0 * 16'384 / 2 * 128 * 320 * 2 * 61 / (8 * 2.5e15);
  const double t = run.done[0].second.since_start().seconds();
  EXPECT_GT(t, floor_s);
  EXPECT_LT(t, 3 * floor_s);
}

TEST(PrefillWorker, ExpertParallelReplacesTheMoeAllReduceWithAllToAlls) {
  PrefillWorkerConfig tp;
  PrefillWorkerConfig ep;
  ep.expert_parallel = true;
  const PrefillRun a = prefill("gb300", "gb300-nvl72", tp, {8'192, 8'192});
  const PrefillRun b = prefill("gb300", "gb300-nvl72", ep, {8'192, 8'192});
  ASSERT_EQ(a.done.size(), 2u);
  ASSERT_EQ(b.done.size(), 2u);
  // Same FLOPs either way; the two differ only in how the experts' tokens move: within 2x of each other.
  const double ta = a.done.back().second.since_start().seconds(), tb = b.done.back().second.since_start().seconds();
  EXPECT_NE(ta, tb);
  EXPECT_LT(tb / ta, 2.0);
  EXPECT_GT(tb / ta, 0.5);
}

// DeepSeek-V3 per token of an 8,192-token prompt, in GFLOP (2 per weight): attention projections
// 61 x (7168 x 1536 + 1536 x 24576 + 7168 x 576 + 512 x 32768 + 16384 x 7168) = 11.4 G weights, shared
// experts and dense FFNs 3.7 G, head 0.9 G: 32 GFLOP that TP splits over its GPUs and DP attention runs
// on the prompt's own rank; causal attention 128 heads x 320 x 2 x 4,096 keys x 61 = 20.5 GFLOP, split
// alike; routed experts 8 x 3 x 7168 x 2048 x 58 = 20.4 G weights, 40.8 GFLOP, spread by EP either way.
// Per GPU and prompt token: TP8 + EP8 (32 + 20.5 + 40.8) / 8 = 11.7; DEP8 with one prompt 52.5 + 40.8 / 8
// = 57.6, 4.9x as much. Eight prompts, one per rank: each GPU runs 52.5 for its own prompt's tokens and
// 8 x 40.8 / 8 of experts, 93.3 per token of one prompt, as TP8 + EP8 runs (8 x 93.3) / 8: 6.1 PFLOP
// in all, about 0.25 s over eight B300s at 60% of peak. DEP8 saves what TP8 + EP8 spends on top: two
// all-reduces a layer of 16,384 tokens x 7,168 x 2 B = 235 MB each, about 0.63 ms as nccl-tests measured
// 8 GPUs (gb300-nvl72's table: 391.5 us at 128 MiB, 715.2 at 256 MiB), x 122 a step x 4 steps = 0.31 s.
// With the all-to-alls and launches (~0.1 s) on both sides, DEP8 / (TP8 + EP8) ~ 0.35 / 0.66 = 0.53.
TEST(PrefillWorker, DataParallelAttentionRanksEachPrefillTheirOwnPrompts) {
  const std::vector<std::int64_t> eight(8, 8'192);
  const PrefillRun tp = prefill("gb300", "gb300-nvl72", tp8_ep8(), eight);
  const PrefillRun dp = prefill("gb300", "gb300-nvl72", dep8(), eight);
  ASSERT_EQ(dp.done.size(), 8u);
  EXPECT_EQ(dp.prefilled_per_rank, std::vector<std::uint64_t>(8, 1));
  // One step: each rank's 8,192 tokens fit its 16,384-token budget.
  EXPECT_EQ(dp.steps, 1u);
  const double ratio = last_done_s(dp) / last_done_s(tp);
  EXPECT_LT(ratio, 0.8) << "DEP8 " << last_done_s(dp) << " s, TP8 + EP8 " << last_done_s(tp) << " s";
  EXPECT_GT(ratio, 0.45) << "DEP8 " << last_done_s(dp) << " s, TP8 + EP8 " << last_done_s(tp) << " s";
}

TEST(PrefillWorker, ALoneLongPromptOnDataParallelRanksRunsItsAttentionOnOneGpu) {
  const PrefillRun tp = prefill("gb300", "gb300-nvl72", tp8_ep8(), {8'192});
  const PrefillRun dp = prefill("gb300", "gb300-nvl72", dep8(), {8'192});
  ASSERT_EQ(dp.done.size(), 1u);
  EXPECT_EQ(dp.prefilled_per_rank, (std::vector<std::uint64_t>{1, 0, 0, 0, 0, 0, 0, 0}));
  // 4.9x by the FLOPs above, less what TP8 adds: its smaller per-GPU GEMMs, and 122 all-reduces of
  // 8,192 x 7,168 x 2 B = 117 MB, each ~362 us as nccl-tests measured 8 GPUs (gb300-nvl72's table, B300
  // rows: 272.8 us at 64 MiB, 391.5 at 128 MiB, linear between), 44 ms in all: against TP8's ~55 ms of
  // compute (96 TFLOP a GPU at ~60% of its FP8 and BF16 peaks, with launches), 4.9 x 55 / (55 + 44) ~ 2.7.
  const double ratio = last_done_s(dp) / last_done_s(tp);
  EXPECT_GT(ratio, 2.2) << "DEP8 " << last_done_s(dp) << " s, TP8 + EP8 " << last_done_s(tp) << " s";
  EXPECT_LT(ratio, 5.5) << "DEP8 " << last_done_s(dp) << " s, TP8 + EP8 " << last_done_s(tp) << " s";
}

// DP8 attention with MoE TP8 (TensorRT-LLM): the same FLOPs as DEP8 (every GPU runs 1/8 of every expert
// on all 65,536 tokens instead of whole experts on the tokens routed to it); the tokens move as an
// all-gather and a reduce-scatter of 65,536 x 7,168 x 2 B = 940 MB a MoE layer, 7/8 of it into each GPU,
// about 0.9 ms each at 900 GB/s, x 2 x 58 layers = 0.1 s, against EP8's all-to-alls of the routed
// copies (8 per token, FP8 out and BF16 back: about as many bytes). Within 0.8x-1.6x of DEP8.
TEST(PrefillWorker, DataParallelRanksWithMoeTpGatherTheTokensForEveryExpertSlice) {
  const std::vector<std::int64_t> eight(8, 8'192);
  PrefillWorkerConfig moe_tp = dep8();
  moe_tp.expert_parallel = false;
  const PrefillRun ep = prefill("gb300", "gb300-nvl72", dep8(), eight);
  const PrefillRun tp = prefill("gb300", "gb300-nvl72", moe_tp, eight);
  ASSERT_EQ(tp.done.size(), 8u);
  EXPECT_EQ(tp.prefilled_per_rank, std::vector<std::uint64_t>(8, 1));
  const double ratio = last_done_s(tp) / last_done_s(ep);
  EXPECT_GT(ratio, 0.8) << "MoE TP " << last_done_s(tp) << " s, EP " << last_done_s(ep) << " s";
  EXPECT_LT(ratio, 1.6) << "MoE TP " << last_done_s(tp) << " s, EP " << last_done_s(ep) << " s";
}

TEST(PrefillWorker, DataParallelRanksNeedOneStageAndRanksThatDivideTheGpus) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 8);
  const ModelProfile model = load_model_profile(model_profile_path("deepseek-v3"));
  const auto error = [&](PrefillWorkerConfig cfg) -> std::string {
    try {
      PrefillWorker w(rt, model, cluster.devices(0, 8), cluster.collectives(), cfg, [](const StepOutcome&) {},
                      [](RequestId, std::int64_t, std::int64_t, std::uint64_t) {}, [](RequestId, const std::string&) {});
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  PrefillWorkerConfig staged = dep8();
  staged.attention_dp = 4;
  staged.pipeline_stages = 2;
  EXPECT_NE(error(staged).find("pipeline stages are not modelled"), std::string::npos) << error(staged);
  PrefillWorkerConfig uneven = dep8();
  uneven.attention_dp = 3;
  EXPECT_NE(error(uneven).find("do not divide"), std::string::npos) << error(uneven);
}

TEST(PrefillWorker, MlaKvIsHeldWholeOnEveryRankAndGqaKvIsSplit) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 16);
  auto none = [](RequestId, const std::string&) {};
  const ModelProfile ds = load_model_profile(model_profile_path("deepseek-v3"));
  PrefillWorker mla(rt, ds, cluster.devices(0, 8), cluster.collectives(), PrefillWorkerConfig{}, [](const StepOutcome&) {},
                    [](RequestId, std::int64_t, std::int64_t, std::uint64_t) {}, none);
  EXPECT_EQ(mla.kv_bytes_per_token_per_gpu(), 35'136u);  // REFERENCE.md §2: FP8 MLA, all layers
  PrefillWorkerConfig bf16;
  bf16.kv_dtype = hal::DType::bf16;
  const ModelProfile glm = load_model_profile(model_profile_path("glm-4.5"));
  PrefillWorker gqa(rt, glm, cluster.devices(8, 8), cluster.collectives(), bf16, [](const StepOutcome&) {},
                    [](RequestId, std::int64_t, std::int64_t, std::uint64_t) {}, none);
  EXPECT_EQ(gqa.kv_bytes_per_token_per_gpu(), 376'832u / 8);  // REFERENCE.md §2: 8 KV heads over TP8
}

TEST(PrefillWorker, ATpDegreeThatDoesNotDivideTheHeadsIsRejected) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 8);
  const ModelProfile model = load_model_profile(model_profile_path("deepseek-v3"));
  try {
    PrefillWorker w(rt, model, cluster.devices(0, 3), cluster.collectives(), PrefillWorkerConfig{},
                    [](const StepOutcome&) {}, [](RequestId, std::int64_t, std::int64_t, std::uint64_t) {},
                    [](RequestId, const std::string&) {});
    FAIL() << "TP3 cannot split 128 heads";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("does not divide"), std::string::npos) << e.what();
  }
}

TEST(PrefillWorker, AModelThatDoesNotFitIsAClearError) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "h100", "hgx-h100", 8);
  const ModelProfile model = load_model_profile(model_profile_path("deepseek-v3"));
  // 671B FP8 parameters over 8 GPUs is about 84 GB per GPU: more than an H100's 80 GB.
  try {
    PrefillWorker w(rt, model, cluster.devices(0, 8), cluster.collectives(), PrefillWorkerConfig{},
                    [](const StepOutcome&) {}, [](RequestId, std::int64_t, std::int64_t, std::uint64_t) {},
                    [](RequestId, const std::string&) {});
    FAIL() << "DeepSeek-V3 over 8 H100s should not fit";
  } catch (const hal::HalError& e) {
    EXPECT_NE(std::string(e.what()).find("device 0"), std::string::npos) << e.what();
  }
}

TEST(PrefillWorker, BadLayerGroupsAreRejected) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 8);
  const ModelProfile model = load_model_profile(model_profile_path("deepseek-v3"));
  PrefillWorkerConfig cfg;
  cfg.kv_layer_groups = 0;
  EXPECT_THROW(PrefillWorker(rt, model, cluster.devices(0, 8), cluster.collectives(), cfg, [](const StepOutcome&) {},
                             [](RequestId, std::int64_t, std::int64_t, std::uint64_t) {},
                             [](RequestId, const std::string&) {}),
               std::invalid_argument);
}

}  // namespace prefill_worker_test
}  // namespace nvl::engine
