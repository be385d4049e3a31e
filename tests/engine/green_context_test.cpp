// SM partitions (green contexts, SGLang's PD-multiplexing): a mixed DEP8 group of DeepSeek-V3 on
// GB300 runs decode on 70% of each GPU's SMs and prefill chunks beside it on 30%, instead of in one
// batch. What that buys (decode keeps its pace while a long prompt prefills), what it costs (the long
// prompt's first token), that it is deterministic, and that a lost GPU still stops both sides and
// its requests finish elsewhere.
#include <map>

#include <gtest/gtest.h>

#include "emu/cluster/emulated_cluster.h"
#include "emu/rt/virtual_runtime.h"
#include "engine/system/pd_system.h"
#include "engine/worker/normal_worker_group.h"
#include "fabric/fabric_rdma.h"
#include "tests/engine/step_outcomes_rig.h"

namespace nvl::engine {
namespace green_context_test {

constexpr int kRanks = 8;
constexpr int kDecodesPerRank = 8;
constexpr RequestId kLong = 1'000;
constexpr std::int64_t kLongPrompt = 32'768;  // four 8,192-token chunks
// Split, the decodes' own prompts prefill on 30% of the SMs: by 3 s every rank decodes in steady state.
const rt::Time kLongAt = rt::Time::from_ns(rt::ms(4'000).ns());

struct Figures {
  double tpot_before_ms = 0;  // decode, the second before the long prompt arrives
  double tpot_during_ms = 0;  // decode, from its arrival to its first token
  double ttft_long_ms = 0;
  std::map<RequestId, std::vector<rt::Time>> times;  // when each request got output tokens
};

// Every rank decodes 8 requests (1K prompts, long outputs); at 4 s a 32K prompt arrives on rank 0.
Figures run(double sm_prefill) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", kRanks);
  const ModelProfile model = load_model_profile(model_profile_path("deepseek-v3"));
  NormalGroupConfig cfg;
  cfg.sm_partition_prefill = sm_prefill;
  Figures f;
  auto& times = f.times;
  std::unique_ptr<NormalWorkerGroup> group;
  group = std::make_unique<NormalWorkerGroup>(
      rt, model, cluster.devices(0, kRanks), cluster.collectives(), cfg,
      [&](std::int32_t, const StepOutcome& o) {
        if (o.new_output_tokens == 0) return;  // a prefill chunk before the last
        times[o.id].push_back(rt.now());
        if (o.id != kLong) return;
        // The long prompt is served: the decodes leave, so the run ends.
        for (std::int32_t r = 0; r < kRanks; ++r) {
          for (RequestId id = 1; id <= kRanks * kDecodesPerRank; ++id) group->cancel(r, id);
        }
      },
      [](std::int32_t, RequestId id, const std::string& why) { ADD_FAILURE() << "rejected " << id << ": " << why; });
  group->start();
  RequestId id = 1;
  for (std::int32_t r = 0; r < kRanks; ++r) {
    for (int k = 0; k < kDecodesPerRank; ++k) {
      RequestState q;
      q.id = id++;
      q.prompt_tokens = 1'024;
      q.max_output_tokens = 100'000;
      group->submit(r, std::move(q));
    }
  }
  rt.call_at(kLongAt, [&] {
    RequestState q;
    q.id = kLong;
    q.prompt_tokens = kLongPrompt;
    q.max_output_tokens = 1;
    group->submit(0, std::move(q));
  });
  rt.run();
  EXPECT_EQ(times[kLong].size(), 1u);
  const rt::Time first = times[kLong].front();
  f.ttft_long_ms = static_cast<double>((first - kLongAt).ns()) / 1e6;
  // Mean time per output token of the decodes over a window: the gaps between the tokens inside it.
  const auto tpot_ms = [&](rt::Time from, rt::Time to) {
    double sum = 0;
    for (RequestId d = 1; d <= kRanks * kDecodesPerRank; ++d) {
      std::vector<rt::Time> in;
      for (rt::Time t : times[d]) {
        if (t >= from && t <= to) in.push_back(t);
      }
      EXPECT_GE(in.size(), 3u) << "request " << d << " decodes through the window";
      if (in.size() < 2) continue;
      sum += static_cast<double>((in.back() - in.front()).ns()) / 1e6 / static_cast<double>(in.size() - 1);
    }
    return sum / (kRanks * kDecodesPerRank);
  };
  f.tpot_before_ms = tpot_ms(kLongAt - rt::ms(1'000), kLongAt);
  f.tpot_during_ms = tpot_ms(kLongAt, first);
  return f;
}

TEST(GreenContexts, DecodeKeepsItsPaceWhileALongPromptPrefills) {
  const Figures batch = run(0);
  const Figures split = run(0.3);
  // Hand estimate. A decode step of 8 tokens per rank is ~20 ms here, nearly all of it the EP
  // all-to-alls and per-kernel overheads, which SM shares do not scale; its compute and HBM parts are
  // ~1-2 ms. One batch: every step that carries an 8,192-token chunk of the 32K prompt (~6e14 FLOP
  // of GEMMs plus as much of attention over the growing context, ~0.6 s) is also every rank's decode
  // step, as the all-to-all joins them: the decode TPOT during the prefill is the chunk's time, ~30x.
  // Split: a decode step runs beside the chunk on 70% of the SMs and 70% of the HBM bandwidth, its
  // ~1.5 ms of compute and memory up to 1/0.7 longer: ~20.5 ms, never held by the chunk.
  EXPECT_GT(batch.tpot_during_ms, 10 * batch.tpot_before_ms);
  EXPECT_LT(split.tpot_during_ms, 1.2 * split.tpot_before_ms);
  EXPECT_LT(split.tpot_during_ms, 0.1 * batch.tpot_during_ms);
  // Alone the decode side still has only 70% of the SMs (all the HBM bandwidth): a little slower.
  EXPECT_GE(split.tpot_before_ms, batch.tpot_before_ms);
  EXPECT_LT(split.tpot_before_ms, 1.1 * batch.tpot_before_ms);
  std::cout << "decode TPOT before / during the long prefill, ms: one batch " << batch.tpot_before_ms << " / "
            << batch.tpot_during_ms << ", split " << split.tpot_before_ms << " / " << split.tpot_during_ms << "\n";
}

TEST(GreenContexts, ALongPromptsFirstTokenTakesLongerOnThirtyPercentOfTheSms) {
  const Figures batch = run(0);
  const Figures split = run(0.3);
  // Hand estimate: the chunks are compute-bound (~0.6 s each in one batch, where the decodes add
  // little), so on 30% of the SMs each takes up to 1/0.3 = 3.3x as long; their all-to-alls and
  // overheads do not scale, so a little less: TTFT 2.5-3.3x that of one batch (~2.6 s -> ~7 s).
  EXPECT_GT(split.ttft_long_ms, 2.5 * batch.ttft_long_ms);
  EXPECT_LT(split.ttft_long_ms, 1 / 0.3 * batch.ttft_long_ms);
  std::cout << "32K-token TTFT beside 64 decodes, ms: one batch " << batch.ttft_long_ms << ", split "
            << split.ttft_long_ms << "\n";
}

TEST(GreenContexts, TheSameRunDeliversTheSameTokensAtTheSameTimes) {
  const Figures a = run(0.3);
  const Figures b = run(0.3);
  EXPECT_EQ(a.times, b.times);
  EXPECT_NE(a.times, run(0).times);
}

TEST(GreenContexts, OutsideTheOpenUnitIntervalOrWithTwoBatchOverlapIsRejected) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 2);
  const ModelProfile model = load_model_profile(model_profile_path("deepseek-v3"));
  const auto make = [&](double f, bool tbo) {
    NormalGroupConfig cfg;
    cfg.sm_partition_prefill = f;
    cfg.two_batch_overlap = tbo;
    NormalWorkerGroup(rt, model, cluster.devices(0, 2), cluster.collectives(), cfg,
                      [](std::int32_t, const StepOutcome&) {}, [](std::int32_t, RequestId, const std::string&) {});
  };
  EXPECT_THROW(make(1.0, false), std::invalid_argument);
  EXPECT_THROW(make(-0.2, false), std::invalid_argument);
  EXPECT_THROW(make(0.3, true), std::invalid_argument);
}

// EPLB under SM partitions: rebalances still happen (each deferred until neither side steps, its
// weight moves before either's next step) and every request still gets each of its tokens.
TEST(GreenContexts, RebalancesWaitForBothSidesAndEveryTokenArrives) {
  rt::VirtualRuntime rt;
  rt.log().keep_records(true);
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", kRanks);
  const ModelProfile model = load_model_profile(model_profile_path("deepseek-v3"));
  NormalGroupConfig cfg;
  cfg.sm_partition_prefill = 0.3;
  cfg.redundant_experts = kRanks;
  cfg.eplb_interval_steps = 3;
  draw_outcomes(cluster, rt, 0, kRanks, {.expert_skew = 0.6, .drift_interval = rt::ms(40), .drift_fraction = 0.5});
  std::map<RequestId, std::int64_t> tokens;
  NormalWorkerGroup group(
      rt, model, cluster.devices(0, kRanks), cluster.collectives(), cfg,
      [&](std::int32_t, const StepOutcome& o) { tokens[o.id] += o.new_output_tokens; },
      [](std::int32_t, RequestId id, const std::string& why) { ADD_FAILURE() << id << ": " << why; });
  group.start();
  RequestId id = 1;
  for (std::int32_t r = 0; r < kRanks; ++r) {
    for (const auto& [prompt, output] : {std::pair<std::int64_t, std::int64_t>{512, 40}, {512, 40}, {16'384, 2}}) {
      RequestState q;
      q.id = id++;
      q.prompt_tokens = prompt;
      q.max_output_tokens = output;
      group.submit(r, std::move(q));
    }
  }
  rt.run();
  for (RequestId k = 1; k < id; ++k) EXPECT_EQ(tokens[k], k % 3 == 0 ? 2 : 40) << k;
  int rebalances = 0;
  for (const std::string& line : rt.log().lines()) rebalances += line.find("\"rebalanced\"") != std::string::npos ? 1 : 0;
  EXPECT_GE(rebalances, 1);
  for (std::int32_t r = 0; r < kRanks; ++r) EXPECT_EQ(group.kv(r).gpu().used_blocks(), 0) << r;
}

// A GPU lost while both sides step: the failed step stops both, the rank is removed between steps,
// and its requests finish on the others with every token delivered once.
TEST(GreenContexts, ALostGpuStopsBothSidesAndItsRequestsFinishElsewhere) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 72);
  fabric::FabricRdma rdma(cluster.fabric());
  const ModelProfile model = load_model_profile(model_profile_path("deepseek-v3"));
  PdDeployment d;
  d.decode.push_back(DecodeInstance{.name = "dep/0", .gpus = cluster.devices(0, 8), .group = {}});
  d.decode.back().group.sm_partition_prefill = 0.3;
  d.decode.back().group.redundant_experts = 8;
  d.system.router.policy = "least_load";
  d.system.health.check_interval = rt::ms(100);
  d.system.health.detection_delay = rt::ms(50);
  std::map<RequestId, std::int64_t> tokens, firsts;
  std::map<RequestId, std::string> failure;
  std::map<std::string, std::vector<rt::Time>> group_events;
  rt.log().set_observer([&](rt::Time t, std::string_view source, std::string_view kind, const nlohmann::json&, rt::Severity) {
    if (source == "normal-group") group_events[std::string(kind)].push_back(t);
  });
  PdSystem system(
      rt, model, cluster.collectives(), &rdma, std::move(d),
      [&](RequestId id, std::int64_t n, bool first, bool) {
        tokens[id] += n;
        firsts[id] += first ? 1 : 0;
      },
      [&](const RequestTiming& t) { failure[t.id] = t.failure; });
  constexpr std::int64_t kOutput = 120;
  const auto submit = [&](RequestId from, RequestId to) {
    for (RequestId id = from; id <= to; ++id) {
      RequestState r;
      r.id = id;
      r.prompt_tokens = 1'500;
      r.max_output_tokens = kOutput;
      system.submit(std::move(r));
    }
  };
  submit(1, 24);
  // The first wave decodes from ~0.4 s; the second prefills from 0.6 s: the GPU goes with both sides'
  // steps in flight.
  rt.call_after(rt::ms(600), [&] { submit(25, 48); });
  rt.call_after(rt::ms(650), [&] { cluster.fleet().device(3).inject_gpu_lost(); });
  rt.run();
  for (RequestId id = 1; id <= 48; ++id) {
    ASSERT_TRUE(failure.contains(id)) << id;
    EXPECT_EQ(failure[id], "") << id;
    EXPECT_EQ(tokens[id], kOutput) << "request " << id << ": every token exactly once";
    EXPECT_EQ(firsts[id], 1) << id;
  }
  // The decode step fails at once; the prefill chunk in flight beside it fails when its collectives
  // next reach the aborted communicator (at once when its graph is in its fast-forwarded layers, whose
  // calls the group holds), and only then (between steps) is the rank taken out.
  ASSERT_EQ(group_events["step_failed"].size(), 2u);
  ASSERT_EQ(group_events["rank_removed"].size(), 1u);
  EXPECT_LE(group_events["step_failed"][0], group_events["step_failed"][1]);
  EXPECT_GE(group_events["rank_removed"][0], group_events["step_failed"][1]);
  EXPECT_FALSE(system.rank_live(3));
  EXPECT_EQ(system.decode_instance(0).live_ranks(), 7);
  for (std::int32_t r = 0; r < 8; ++r) {
    if (r != 3) {
      EXPECT_EQ(system.kv(r).gpu().used_blocks(), 0) << r;
    }
  }
}

}  // namespace green_context_test
}  // namespace nvl::engine
