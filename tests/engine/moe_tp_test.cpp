// MoE TP in the normal worker group (expert_parallel = false): DeepSeek-V3 on 8 GB300s as TP8 with
// its experts split by TP (the attention all-reduces combine them) against TP8 + EP8, and as
// attention DP8 with MoE TP8 (TensorRT-LLM's attention DP: every rank's tokens all-gathered before the
// experts, the outputs reduce-scattered back) against DP8 + EP8: the collectives each step runs, their
// bytes, the expert weights each GPU holds and the decode step time, each against a hand estimate.
#include <map>
#include <optional>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "emu/cluster/emulated_cluster.h"
#include "emu/rt/virtual_runtime.h"
#include "engine/worker/normal_worker_group.h"
#include "tests/engine/decode_step_time.h"
#include "tests/engine/test_request.h"

namespace nvl::engine {
namespace moe_tp_test {

using test::request;

using hal::CollectiveKind;

// A collective GPU 0 took part in.
struct Call {
  CollectiveKind kind;
  std::uint64_t bytes;
};

// The cluster's collectives, with GPU 0's calls written down on their way through.
class RecordingCollectives final : public hal::Collectives {
 public:
  explicit RecordingCollectives(hal::Collectives& real) : real_(real) {}
  std::shared_ptr<hal::CommGroup> create_group(std::string name, std::vector<hal::DeviceId> members) override {
    return std::make_shared<Group>(real_.create_group(std::move(name), std::move(members)), calls);
  }
  std::vector<Call> calls;

 private:
  class Group final : public hal::CommGroup {
   public:
    Group(std::shared_ptr<hal::CommGroup> real, std::vector<Call>& calls) : real_(std::move(real)), calls_(calls) {}
    const std::string& name() const override { return real_->name(); }
    const std::vector<hal::DeviceId>& members() const override { return real_->members(); }
    void arrive(int rank, hal::SharedCollectiveOp op, hal::CollectiveDone done) override {
      if (members()[static_cast<std::size_t>(rank)] == 0) calls_.push_back(Call{op->kind, op->bytes});
      real_->arrive(rank, std::move(op), std::move(done));
    }
    void repeat(int rank, hal::SharedCollectiveOp op, std::size_t times, rt::Duration lead, rt::Duration span,
                hal::CollectiveDone done) override {
      real_->repeat(rank, std::move(op), times, lead, span, std::move(done));
    }

   private:
    std::shared_ptr<hal::CommGroup> real_;
    std::vector<Call>& calls_;
  };
  hal::Collectives& real_;
};

// DeepSeek-V3 over 8 GB300s with attention TP `tp`, its experts by EP or MoE TP.
struct Rig {
  Rig(std::int64_t tp, bool expert_parallel)
      : cluster(rt, "gb300", "gb300-nvl72", 8),
        recording(cluster.collectives()),
        model(load_model_profile(model_profile_path("deepseek-v3"))) {
    NormalGroupConfig cfg;
    cfg.attention_tp = tp;
    cfg.expert_parallel = expert_parallel;
    cfg.activation_reserve_bytes = 20'000'000'000;
    group.emplace(
        rt, model, cluster.devices(0, 8), recording, cfg,
        [this](std::int32_t, const StepOutcome& o) {
          tokens[o.id] += o.new_output_tokens;
          if (o.first_token) first[o.id] = rt.now();
          if (o.finished) finished[o.id] = rt.now();
        },
        [](std::int32_t, RequestId id, const std::string& why) { ADD_FAILURE() << "rejected " << id << ": " << why; });
  }
  // DP rank r gets `per_rank(r)` requests with their KV in place (as after a P/D transfer), so every
  // one decodes from the first step to the last together.
  template <typename PerRank>
  void decode_from(PerRank per_rank, std::int64_t context, std::int64_t output) {
    RequestId id = 1;
    for (std::int32_t r = 0; r < group->ranks(); ++r) {
      for (std::int64_t k = 0; k < per_rank(r); ++k, ++id) {
        ASSERT_TRUE(group->receive(r, request(id, context, output)).has_value());
        group->received(r, id);
      }
    }
  }
  double step_ms(std::int64_t output) const { return test::mean_step_ms(first, finished, output); }

  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster;
  RecordingCollectives recording;
  ModelProfile model;
  std::optional<NormalWorkerGroup> group;
  std::map<RequestId, std::int64_t> tokens;
  std::map<RequestId, rt::Time> first, finished;
};

// By hand, DeepSeek-V3's routed experts in FP8: 58 MoE layers x 256 experts x 3 x 7,168 x 2,048 (44.0M
// params, one byte each) = 654 GB; over 8 GPUs 81.7 GB each, whether each GPU holds 32 whole experts
// (EP8) or an eighth of every expert (MoE TP8).
constexpr double kRoutedGbPerGpu = 58.0 * 256 * 3 * 7'168 * 2'048 / 8 / 1e9;

// What a run of 10-token decodes showed: the decode step time, the expert bytes per GPU, and the
// collectives GPU 0 took part in (the device runs the first two of a repeated layer's collectives one
// by one and waits out the rest, so these are counts of calls, the same for every step).
struct Seen {
  double step_ms = 0;
  std::uint64_t routed_bytes = 0;
  std::uint64_t steps = 0;
  std::map<CollectiveKind, std::size_t> calls;
  std::vector<std::uint64_t> gather_bytes;  // every all-gather's and reduce-scatter's size
};

template <typename PerRank>
Seen decode(std::int64_t tp, bool expert_parallel, PerRank per_rank) {
  Rig rig(tp, expert_parallel);
  Seen seen;
  seen.routed_bytes = rig.group->weights().routed_expert_bytes;
  rig.group->start();
  rig.decode_from(per_rank, 1'000, 10);
  rig.rt.run();
  std::size_t requests = 0;
  for (std::int32_t r = 0; r < rig.group->ranks(); ++r) requests += static_cast<std::size_t>(per_rank(r));
  EXPECT_EQ(rig.finished.size(), requests);
  for (const auto& [id, n] : rig.tokens) EXPECT_EQ(n, 10) << id;
  seen.steps = rig.group->steps();
  for (const Call& c : rig.recording.calls) {
    ++seen.calls[c.kind];
    if (c.kind == CollectiveKind::all_gather || c.kind == CollectiveKind::reduce_scatter) seen.gather_bytes.push_back(c.bytes);
  }
  seen.step_ms = rig.step_ms(10);
  return seen;
}

TEST(MoeTp, Tp8SplitsTheExpertsByTpAndAllReducesWhereEp8AllToAlls) {
  // 32 requests at 1K context decoding 10 tokens on the one TP8 rank. Estimate per decode step:
  // - routed experts: the same FLOPs; only the experts some token chose are read: 256 pairs over 256
  //   uniform experts choose 1 - (1 - 1/256)^256 = 63% of them. Reading all 81.7 GB a GPU takes
  //   W ~ 81.7 GB / (8 TB/s x ~0.85) ~ 12 ms. MoE TP8 reads 63% of every GPU's slices; under EP8 each
  //   GPU reads its own 32 experts' chosen ones (mean 20.3, sd ~2.7) and the step waits for the GPU
  //   that drew the most (about mean + 1.4 sd of 8: 24, 75%): 12 ms x (75% - 63%) ~ 1.4 ms more;
  // - both all-reduce over TP8 after every attention, dense FFN and MoE;
  // - EP8 adds a dispatch and a combine per MoE layer, latency-bound at 4 tokens a GPU: dispatch
  //   9 + 7 x 0.19 + 7.5 = 17.8 us, combine 18.5 + 7 x 0.05 + 11 = 29.9 us (gb300-nvl72 a2a
  //   profile), about 48 us a layer: 58 x 48 us = 2.8 ms.
  // EP8 about 4.2 ms a step slower than MoE TP8.
  const auto all = [](std::int32_t) { return 32; };
  const Seen tp = decode(8, false, all);
  const Seen ep = decode(8, true, all);
  EXPECT_EQ(tp.steps, 9u);  // the first token came with the KV
  EXPECT_EQ(ep.steps, 9u);
  EXPECT_NEAR(static_cast<double>(tp.routed_bytes) / 1e9, kRoutedGbPerGpu, 0.1);
  EXPECT_NEAR(static_cast<double>(ep.routed_bytes) / 1e9, kRoutedGbPerGpu, 0.1);
  EXPECT_GT(tp.calls.at(CollectiveKind::all_reduce), 0u);
  EXPECT_EQ(tp.calls.at(CollectiveKind::all_reduce), ep.calls.at(CollectiveKind::all_reduce));
  EXPECT_EQ(tp.calls.count(CollectiveKind::all_to_all), 0u);
  EXPECT_GT(ep.calls.at(CollectiveKind::all_to_all), 0u);
  EXPECT_EQ(tp.calls.count(CollectiveKind::all_gather), 0u);
  EXPECT_GT(ep.step_ms - tp.step_ms, 3.2) << "MoE TP8 " << tp.step_ms << " ms, EP8 " << ep.step_ms << " ms";
  EXPECT_LT(ep.step_ms - tp.step_ms, 5.2) << "MoE TP8 " << tp.step_ms << " ms, EP8 " << ep.step_ms << " ms";
}

TEST(MoeTp, Dp8GathersEveryRanksTokensBeforeTheExpertsAndScattersThemBack) {
  // DP rank r decodes r + 1 requests: 36 tokens a step over the instance, which every GPU all-gathers
  // (36 x 7,168 x BF16 = 516,096 bytes) and reduce-scatters back each MoE layer; no all-to-all, and no
  // all-reduce at attention TP 1.
  const auto per_rank = [](std::int32_t r) { return r + 1; };
  const Seen tp = decode(1, false, per_rank);
  const Seen ep = decode(1, true, per_rank);
  EXPECT_NEAR(static_cast<double>(tp.routed_bytes) / 1e9, kRoutedGbPerGpu, 0.1);
  EXPECT_EQ(tp.steps, 9u);
  EXPECT_GT(tp.calls.at(CollectiveKind::all_gather), 0u);
  EXPECT_EQ(tp.calls.at(CollectiveKind::all_gather), tp.calls.at(CollectiveKind::reduce_scatter));
  EXPECT_EQ(tp.calls.count(CollectiveKind::all_to_all), 0u);
  EXPECT_EQ(tp.calls.count(CollectiveKind::all_reduce), 0u);
  for (std::uint64_t b : tp.gather_bytes) EXPECT_EQ(b, 36ull * 7'168 * 2);
  EXPECT_EQ(ep.calls.count(CollectiveKind::all_gather), 0u);
  EXPECT_GT(ep.calls.at(CollectiveKind::all_to_all), 0u);
  // Estimate per MoE layer: the same expert FLOPs per GPU (36 x 8 / 8 token-expert pairs' worth either
  // way; MoE TP also reads and writes all 288 pairs' hidden states, 8 MB, ~1 us); the all-gather and
  // the reduce-scatter of 516 KB take what nccl-tests measured over 8 GPUs (gb300-nvl72's table, B300
  // rows: 18.95 and 18.36 us at 512 KiB), ~37 us where EP8's dispatch and combine take ~48 us (above):
  // 58 x 11 us = 0.6 ms. Weights as in the test above: 288 pairs choose 1 - e^-1.125 = 67.5% of the
  // experts, which MoE TP reads evenly, while EP8 waits for the GPU that drew the most of its 32 (mean
  // 21.6, sd ~2.65, the most of 8 ~25.4: 79%): 12 ms x (79% - 67.5%) ~ 1.4 ms. MoE TP about 2.0 ms a step
  // faster.
  EXPECT_GT(ep.step_ms - tp.step_ms, 1.2) << "MoE TP8 " << tp.step_ms << " ms, EP8 " << ep.step_ms << " ms";
  EXPECT_LT(ep.step_ms - tp.step_ms, 3.0) << "MoE TP8 " << tp.step_ms << " ms, EP8 " << ep.step_ms << " ms";
}

TEST(MoeTp, ALostRankLeavesTheOthersSplittingTheExpertsSevenWays) {
  Rig rig(1, false);
  NormalWorkerGroup& g = *rig.group;
  std::vector<nlohmann::json> rebuilt;
  rig.rt.log().set_observer([&](rt::Time, std::string_view source, std::string_view kind, const nlohmann::json& f,
                                rt::Severity) {
    if (source == "normal-group" && kind == "ep_group_rebuilt") rebuilt.push_back(f);
  });
  std::vector<RequestState> taken;
  g.on_step_failure([&](std::int32_t rank, const hal::HalError&) {
    g.remove_rank(rank, "GPU lost", [&](std::vector<RequestState> requests) { taken = std::move(requests); });
  });
  g.start();
  for (RequestId id = 1; id <= 16; ++id) g.submit(static_cast<std::int32_t>((id - 1) / 2), request(id, 1'000, 200));
  rig.rt.call_after(rt::ms(100), [&] { rig.cluster.fleet().device(3).inject_gpu_lost(); });
  rig.recording.calls.clear();
  rig.rt.run();

  EXPECT_FALSE(g.live(3));
  EXPECT_EQ(g.live_ranks(), 7);
  EXPECT_EQ(taken.size(), 2u);
  for (RequestId id = 1; id <= 16; ++id) {
    if (id == 7 || id == 8) continue;
    EXPECT_EQ(rig.tokens[id], 200) << id;
  }
  ASSERT_FALSE(rebuilt.empty());
  EXPECT_EQ(rebuilt.back()["ranks"], 7);
  // The last all-gathers gather the 14 survivors' tokens (while all still decode).
  bool seen = false;
  for (const Call& c : rig.recording.calls) seen = seen || (c.kind == CollectiveKind::all_gather && c.bytes == 14ull * 7'168 * 2);
  EXPECT_TRUE(seen);
}

}  // namespace moe_tp_test
}  // namespace nvl::engine
