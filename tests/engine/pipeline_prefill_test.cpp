// Pipeline-parallel prefill (SGLang's chunked PP): DeepSeek-V3 on TP4 x PP2 over 8 emulated GB300s
// against TP4 on 4 GPUs and TP8 on 8, a 128K-token prompt in chunks of 16,384. The times are checked
// against hand estimates written next to each test; KV readiness comes per stage, in layer order.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "emu/cluster/emulated_cluster.h"
#include "emu/rt/virtual_runtime.h"
#include "engine/hal/hal_error.h"
#include "engine/worker/prefill_worker.h"

namespace nvl::engine {
namespace pipeline_prefill_test {

constexpr std::int64_t kChunk = 16'384;
constexpr std::int64_t kLongPrompt = 8 * kChunk;  // 131,072 tokens: eight chunks

struct KvReady {
  std::int64_t layers_done, total_layers;
  std::uint64_t bytes;
  rt::Time at;
};

struct Timed {
  double seconds = 0;  // the last prompt's first token
  std::vector<RequestId> done;
  std::vector<KvReady> ready;
  std::uint64_t steps = 0;
  std::int64_t kv_blocks = 0;
};

PrefillWorkerConfig config(std::int64_t pp) {
  PrefillWorkerConfig cfg;
  cfg.scheduler.chunk_tokens = kChunk;
  cfg.scheduler.token_budget = kChunk;
  cfg.pipeline_stages = pp;
  return cfg;
}

Timed prefill(int gpus, PrefillWorkerConfig cfg, std::vector<std::int64_t> prompts) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 8);
  const ModelProfile model = load_model_profile(model_profile_path("deepseek-v3"));
  Timed run;
  PrefillWorker worker(
      rt, model, cluster.devices(0, gpus), cluster.collectives(), cfg,
      [&](const StepOutcome& o) {
        EXPECT_TRUE(o.first_token);
        run.done.push_back(o.id);
        run.seconds = rt.now().since_start().seconds();
      },
      [&](RequestId, std::int64_t done, std::int64_t total, std::uint64_t bytes) {
        run.ready.push_back(KvReady{done, total, bytes, rt.now()});
      },
      [](RequestId id, const std::string& why) { ADD_FAILURE() << "rejected " << id << ": " << why; });
  worker.start();
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    RequestState r;
    r.id = i + 1;
    r.prompt_tokens = prompts[i];
    worker.submit(0, r);
  }
  rt.run();
  EXPECT_EQ(run.done.size(), prompts.size());
  run.steps = worker.steps();
  run.kv_blocks = worker.kv().gpu().capacity();
  EXPECT_TRUE(worker.scheduler().idle());
  EXPECT_EQ(worker.kv().gpu().used_blocks(), 0);
  worker.kv().check_invariants();
  return run;
}

TEST(PipelinePrefill, LongPromptOverlapsItsChunksOverTheStages) {
  const Timed pp2 = prefill(8, config(2), {kLongPrompt});
  const Timed tp4 = prefill(4, config(1), {kLongPrompt});
  const Timed tp8 = prefill(8, config(1), {kLongPrompt});
  ASSERT_GT(pp2.seconds, 0);
  EXPECT_EQ(pp2.steps, 8u);
  // Hand estimate. Let c_i be chunk i's time on TP4 (all 61 layers). Each stage runs about half the
  // layers at the same TP4 shapes, so chunk i takes c_i / 2 on a stage. Stage 0 (31 layers) is never
  // faster than stage 1 (30 layers and a one-token head), so it sets the pace: the pipeline fills with
  // chunk 0 on stage 0 and drains with the last chunk on stage 1, T_pp2 ~ sum(c_i) / 2 + c_7 / 2 =
  // T_tp4 / 2 + c_7 / 2. For uniform chunks that is (C + pp - 1) x c / 2 = 9/16 of T_tp4. The chunks
  // are not uniform: at 128K the attention dominates and grows with the context. DeepSeek-V3's GEMMs
  // are 2 x 37e9 x 16,384 = 1.2e15 FLOPs a chunk at FP8; chunk i's MHA-form attention is 16,384 x
  // (16,384 i + 8,192) query-key pairs x 128 heads x 320 x 2 x 61 layers = 1.34e15 (i + 1/2) FLOPs at
  // BF16, half the FP8 rate, so 2.68e15 (i + 1/2) FP8-equivalent. So c_i ~ 1.2 + 2.68 (i + 1/2), the
  // sum ~ 95 and c_7 ~ 21: T_pp2 / T_tp4 ~ 0.5 + 21 / 95 / 2 ~ 0.61 (0.5 is the bound with no bubble;
  // 9/16 the uniform case). TP8 runs every chunk at about half the TP4 time with no bubble, so
  // T_pp2 / T_tp8 ~ 0.61 / 0.5 ~ 1.22, less whatever TP8's larger all-reduces cost it.
  const double vs_tp4 = pp2.seconds / tp4.seconds, vs_tp8 = pp2.seconds / tp8.seconds;
  EXPECT_GT(vs_tp4, 0.5) << pp2.seconds << " s vs " << tp4.seconds << " s";
  EXPECT_LT(vs_tp4, 0.7) << pp2.seconds << " s vs " << tp4.seconds << " s";
  EXPECT_GT(vs_tp8, 1.0) << pp2.seconds << " s vs " << tp8.seconds << " s";
  EXPECT_LT(vs_tp8, 1.4) << pp2.seconds << " s vs " << tp8.seconds << " s";
  // KV per GPU holds only the stage's layers: about twice TP8's tokens in the same HBM (the weights
  // per GPU are about the same: half the layers at TP4 against all of them at TP8).
  EXPECT_GT(static_cast<double>(pp2.kv_blocks) / static_cast<double>(tp8.kv_blocks), 1.8);
}

TEST(PipelinePrefill, OneChunkGainsNothingFromThePipeline) {
  // Hand estimate: one chunk has nothing to overlap. It runs stage 0's 31 layers, then stage 1's 30 and
  // the head, each at TP4 shapes, so T_pp2 = T_tp4 plus the hand-on (16,384 x 7,168 x 2 B = 235 MB per
  // rank over NVLink, well under a millisecond) and the extra launches: no faster, and not by more
  // than a few percent slower.
  const Timed pp2 = prefill(8, config(2), {kChunk});
  const Timed tp4 = prefill(4, config(1), {kChunk});
  ASSERT_GT(pp2.seconds, 0);
  EXPECT_GE(pp2.seconds, tp4.seconds);
  EXPECT_LT(pp2.seconds, 1.05 * tp4.seconds);
}

TEST(PipelinePrefill, PromptsQueuedTogetherFinishInOrder) {
  // Three prompts of two chunks each (FCFS, one chunk a step). A step that finishes a prompt drains the
  // pipeline (the scheduler hears of it once the last stage is done), so each prompt fills and drains
  // it as if it ran alone: three times one prompt's (2 + 1) stage times. The next prompt's first chunk
  // does not overlap the last one's final chunk, as it could in SGLang.
  const Timed pp2 = prefill(8, config(2), {2 * kChunk, 2 * kChunk, 2 * kChunk});
  const Timed one = prefill(8, config(2), {2 * kChunk});
  EXPECT_EQ(pp2.done, (std::vector<RequestId>{1, 2, 3}));
  EXPECT_EQ(pp2.steps, 6u);
  EXPECT_NEAR(pp2.seconds / one.seconds, 3.0, 0.01);
}

TEST(PipelinePrefill, KvIsReadyStageByStageInLayerOrder) {
  const Timed pp2 = prefill(8, config(2), {40'000});
  // Stage 0 runs layers [0, 31), stage 1 [31, 61); each cuts its layers of the finishing step into four
  // groups: 31 k / 4 and 31 + 30 k / 4. FP8 MLA KV is 576 B per token and layer.
  const std::int64_t ends[] = {7, 15, 23, 31, 38, 46, 53, 61};
  ASSERT_EQ(pp2.ready.size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(pp2.ready[i].layers_done, ends[i]);
    EXPECT_EQ(pp2.ready[i].total_layers, 61);
    EXPECT_EQ(pp2.ready[i].bytes, 40'000ull * 576 * static_cast<std::uint64_t>(ends[i]));
    if (i > 0) {
      EXPECT_GT(pp2.ready[i].at, pp2.ready[i - 1].at);
    }
  }
}

TEST(PipelinePrefill, EachStageHoldsItsLayersWeightsAndKv) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 8);
  const ModelProfile model = load_model_profile(model_profile_path("deepseek-v3"));
  PrefillWorker w(rt, model, cluster.devices(0, 8), cluster.collectives(), config(2), [](const StepOutcome&) {},
                  [](RequestId, std::int64_t, std::int64_t, std::uint64_t) {}, [](RequestId, const std::string&) {});
  EXPECT_EQ(w.tp(), 4);
  EXPECT_EQ(w.pp(), 2);
  EXPECT_EQ(w.layers(0).first_layer, 0);
  EXPECT_EQ(w.layers(0).end_layer, 31);
  EXPECT_EQ(w.layers(1).first_layer, 31);
  EXPECT_EQ(w.layers(1).end_layer, 61);
  EXPECT_EQ(w.kv_bytes_per_token_per_gpu(0), 576u * 31);
  EXPECT_EQ(w.kv_bytes_per_token_per_gpu(1), 576u * 30);
  // The embedding table on the first stage, LM head and MTP module on the last; the three dense
  // layers are stage 0's, so all of its MoE layers are 28 of the 58.
  EXPECT_GT(w.weights(0).embedding_bytes, 0u);
  EXPECT_EQ(w.weights(0).mtp_bytes, 0u);
  EXPECT_GT(w.weights(1).mtp_bytes, 0u);
  EXPECT_EQ(w.weights(1).dense_ffn_bytes, 0u);
  const WeightFootprint whole = weight_footprint_per_gpu(model, ParallelLayout{.tp = 4}, WeightDtypes{});
  EXPECT_EQ(w.weights(0).routed_expert_bytes, whole.routed_expert_bytes / 58 * 28);
  EXPECT_EQ(w.weights(0).dense_ffn_bytes, whole.dense_ffn_bytes);
  const double both = static_cast<double>(w.weights(0).total_bytes() + w.weights(1).total_bytes());
  EXPECT_NEAR(both / static_cast<double>(whole.total_bytes()), 1.0, 1e-6);
}

TEST(PipelinePrefill, StagesThatLeaveOneWithoutLayersOrDoNotDivideTheGpusAreRejected) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 64);
  const ModelProfile model = load_model_profile(model_profile_path("deepseek-v3"));
  const auto make = [&](int gpus, std::int64_t pp) {
    PrefillWorker w(rt, model, cluster.devices(0, gpus), cluster.collectives(), config(pp), [](const StepOutcome&) {},
                    [](RequestId, std::int64_t, std::int64_t, std::uint64_t) {}, [](RequestId, const std::string&) {});
  };
  // 64 stages of one GPU for 61 layers: three stages would hold none.
  try {
    make(64, 64);
    FAIL() << "64 stages cannot share 61 layers";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("at least one layer"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make(8, 3), std::invalid_argument);
  EXPECT_THROW(make(8, 0), std::invalid_argument);
  EXPECT_THROW(pipeline_stages(model, 62), std::invalid_argument);
  EXPECT_EQ(pipeline_stages(model, 61).back().first_layer, 60);
}

// GPU `lost_gpu` of TP(8 / pp) x PP(pp) lost mid-prompt: the step fails and nothing waits forever on
// a hand-on that the lost GPU's stage never made.
void lose_a_gpu_mid_prompt(std::int64_t pp, int lost_gpu) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 8);
  const ModelProfile model = load_model_profile(model_profile_path("deepseek-v3"));
  std::vector<RequestId> done;
  PrefillWorker w(rt, model, cluster.devices(0, 8), cluster.collectives(), config(pp),
                  [&](const StepOutcome& o) { done.push_back(o.id); },
                  [](RequestId, std::int64_t, std::int64_t, std::uint64_t) {}, [](RequestId, const std::string&) {});
  std::vector<std::string> failures;
  w.on_step_failure([&](const hal::HalError& e) {
    failures.push_back(e.what());
    rt.call_after(rt::ms(1), [&] { w.take_down("test: a GPU is lost"); });  // as health watching would
  });
  w.start();
  RequestState r;
  r.id = 1;
  r.prompt_tokens = kLongPrompt;
  w.submit(0, r);
  rt.call_after(rt::ms(500), [&] { cluster.fleet().device(lost_gpu).inject_gpu_lost(); });
  rt.run();
  EXPECT_TRUE(done.empty());
  ASSERT_GE(failures.size(), 1u);
  EXPECT_FALSE(w.live());
  EXPECT_EQ(w.kv().gpu().used_blocks(), 0);
  w.kv().check_invariants();
}

TEST(PipelinePrefill, AGpuLostOnAnyStageFailsTheStep) {
  lose_a_gpu_mid_prompt(2, 6);  // rank 2 of the last stage
  lose_a_gpu_mid_prompt(2, 1);  // rank 1 of the first
  lose_a_gpu_mid_prompt(4, 3);  // TP2 x PP4: rank 1 of stage 1, between two others
}

TEST(PipelinePrefill, ExpertParallelRunsOverEachStagesGpus) {
  PrefillWorkerConfig tp = config(2);
  PrefillWorkerConfig ep = config(2);
  ep.expert_parallel = true;
  const Timed a = prefill(8, tp, {2 * kChunk});
  const Timed b = prefill(8, ep, {2 * kChunk});
  ASSERT_GT(b.seconds, 0);
  // Same FLOPs; only the experts' traffic differs (EP4 all-to-alls in each stage): within 2x.
  EXPECT_NE(a.seconds, b.seconds);
  EXPECT_LT(b.seconds / a.seconds, 2.0);
  EXPECT_GT(b.seconds / a.seconds, 0.5);
}

TEST(PipelinePrefill, ALinkFaultOnHealthyGpusRestartsTheChunksTheLastStageHadNotRun) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 8);
  const ModelProfile model = load_model_profile(model_profile_path("deepseek-v3"));
  std::vector<std::string> kinds;
  rt.log().set_observer([&](rt::Time, std::string_view, std::string_view kind, const nlohmann::json&, rt::Severity) {
    kinds.emplace_back(kind);
  });
  double first_token = 0;
  PrefillWorker w(rt, model, cluster.devices(0, 8), cluster.collectives(), config(2),
                  [&](const StepOutcome&) { first_token = rt.now().since_start().seconds(); },
                  [](RequestId, std::int64_t, std::int64_t, std::uint64_t) {}, [](RequestId, const std::string&) {});
  int failures = 0;
  w.on_step_failure([&](const hal::HalError&) { ++failures; });
  w.start();
  RequestState r;
  r.id = 1;
  r.prompt_tokens = kLongPrompt;
  w.submit(0, r);
  // GPU 6 (rank 2 of stage 1) loses its NVLinks for a second mid-prompt: its collectives fail, every GPU
  // stays healthy, so the worker retries on new communicators until the links are back.
  const auto links = [&](bool down) {
    for (int s = 0; s < 18; ++s) cluster.fabric().set_link_down("rack0/tray1/gpu2", "rack0/nvswitch" + std::to_string(s), down);
  };
  rt.call_after(rt::ms(500), [&] { links(true); });
  rt.call_after(rt::ms(1500), [&] { links(false); });
  rt.run();
  EXPECT_GE(failures, 1);
  EXPECT_TRUE(w.live());
  // The chunks stage 0 had handed on before the fault were counted, but stage 1 never ran them: the
  // prompt starts again, so it ends later than the fault-free 4.9 s plus the outage.
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "restarted_unconfirmed"), kinds.end());
  EXPECT_GT(first_token, 1.5 + 4.5);
  EXPECT_TRUE(w.scheduler().idle());
  EXPECT_EQ(w.kv().gpu().used_blocks(), 0);
  w.kv().check_invariants();
}

}  // namespace pipeline_prefill_test
}  // namespace nvl::engine
