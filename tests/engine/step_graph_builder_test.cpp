// Step graphs: every layer's kernels and the EP all-to-alls in order, with the kernel lists and
// collective ops that depend only on the token counts shared from one step to the next (so a device
// updating its exec prices again only what changed).
#include <gtest/gtest.h>

#include "engine/exec/step_graph_builder.h"

namespace nvl::engine {
namespace {

// Members only: the builder never runs a collective.
class Members final : public hal::CommGroup {
 public:
  explicit Members(int n) {
    for (int i = 0; i < n; ++i) members_.push_back(i);
  }
  const std::string& name() const override { return name_; }
  const std::vector<hal::DeviceId>& members() const override { return members_; }
  void arrive(int, hal::SharedCollectiveOp, hal::CollectiveDone) override { ADD_FAILURE() << "not run here"; }
  void repeat(int, hal::SharedCollectiveOp, std::size_t, rt::Duration, hal::CollectiveDone) override {
    ADD_FAILURE() << "not run here";
  }

 private:
  std::string name_ = "ep";
  std::vector<hal::DeviceId> members_;
};

RankBatch decodes(int sequences, std::int64_t context) {
  RankBatch b;
  for (int i = 0; i < sequences; ++i) b.decodes.push_back(DecodeSpan{context + 100 * i, 1});
  return b;
}

// The kernel lists of a graph in order, repeated bodies once.
std::vector<hal::SharedKernels> lists_of(const hal::Graph& g) {
  std::vector<hal::SharedKernels> out;
  for (const auto& node : g.nodes()) {
    if (const auto* k = std::get_if<hal::KernelsNode>(&node)) out.push_back(k->kernels);
    if (const auto* r = std::get_if<hal::RepeatNode>(&node)) {
      for (const auto& inner : lists_of(*r->body)) out.push_back(inner);
    }
  }
  return out;
}

std::vector<std::shared_ptr<const hal::CollectiveOp>> ops_of(const hal::Graph& g) {
  std::vector<std::shared_ptr<const hal::CollectiveOp>> out;
  for (const auto& node : g.nodes()) {
    if (const auto* c = std::get_if<hal::CollectiveCall>(&node)) out.push_back(c->op);
    if (const auto* r = std::get_if<hal::RepeatNode>(&node)) {
      for (const auto& inner : ops_of(*r->body)) out.push_back(inner);
    }
  }
  return out;
}

class StepGraphBuilderTest : public ::testing::Test {
 protected:
  static constexpr int kRanks = 4;
  ModelProfile model = load_model_profile(model_profile_path("glm-5"));
  LayerKernels kernels{model, 1, WeightDtypes{}, hal::DType::fp8};
  MoeTraffic traffic{std::vector<double>(kRanks, 1.0 / kRanks), model.num_experts_per_tok};
  std::shared_ptr<hal::CommGroup> group = std::make_shared<Members>(kRanks);
  StepGraphBuilder builder{kernels, &traffic,
                           StepGraphOptions{.ep_group = group, .tp_group = nullptr, .rank = 1, .local_experts = 64, .mtp = false}};
};

TEST_F(StepGraphBuilderTest, AStepHoldsEveryLayersKernelsAndTwoAllToAllsPerMoeLayer) {
  const RankBatch batch = decodes(8, 3'000);
  const std::vector<std::int64_t> tokens{8, 8, 5, 0};
  const hal::Graph g = builder.build(batch, tokens);
  std::vector<hal::KernelDesc> attention, ffn, gate, experts, head;
  kernels.attention(batch, false, attention);
  kernels.dense_ffn(8, ffn);
  kernels.moe_gate_and_shared(8, gate);
  kernels.routed_experts(traffic.expert_tokens(1, tokens), 64, experts);
  kernels.head(8, head);
  const auto dense = static_cast<std::size_t>(model.first_k_dense_replace);
  const auto moe = static_cast<std::size_t>(model.num_hidden_layers) - dense;
  ASSERT_GT(dense, 0u);
  EXPECT_EQ(g.kernel_count(), dense * (attention.size() + ffn.size()) +
                                  moe * (attention.size() + gate.size() + experts.size()) + head.size());
  EXPECT_EQ(g.collective_count(), 2 * moe);
  const auto ops = ops_of(g);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0]->role, hal::AllToAllRole::moe_dispatch);
  EXPECT_EQ(ops[0]->send_bytes, traffic.dispatch_row(1, 8, kernels.dispatch_bytes_per_token()));
  EXPECT_EQ(ops[1]->role, hal::AllToAllRole::moe_combine);
  EXPECT_EQ(ops[1]->send_bytes, traffic.combine_row(1, tokens, kernels.combine_bytes_per_token()));
  // Dense layer: attention and FFN; MoE layer: the same attention list, gate, experts; then the head.
  const auto lists = lists_of(g);
  ASSERT_EQ(lists.size(), 6u);
  EXPECT_EQ(lists[0], lists[2]) << "one attention list for every layer";
  EXPECT_EQ(lists[0]->size(), attention.size());
  EXPECT_EQ((*lists[4])[0].flops, experts[0].flops);
}

TEST_F(StepGraphBuilderTest, ConsecutiveStepsShareWhatTheirTokenCountsFix) {
  const std::vector<std::int64_t> tokens{8, 8, 5, 0};
  const hal::Graph first = builder.build(decodes(8, 3'000), tokens);
  const hal::Graph second = builder.build(decodes(8, 3'001), tokens);  // one token further
  const auto a = lists_of(first);
  const auto b = lists_of(second);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_NE(a[0], b[0]) << "attention follows the contexts";
  const auto indexer_flops = [](const hal::SharedKernels& ks) {
    for (const auto& k : *ks) {
      if (k.name == "idx.score") return k.flops;
    }
    return std::uint64_t{0};
  };
  EXPECT_LT(indexer_flops(a[0]), indexer_flops(b[0]));
  for (std::size_t i : {1u, 3u, 4u, 5u}) EXPECT_EQ(a[i], b[i]) << "list " << i;
  EXPECT_EQ(ops_of(first), ops_of(second));

  // Another rank's count changes the combine; this rank's count changes its dispatch and lists too.
  const std::vector<std::int64_t> other{8, 8, 6, 0};
  const hal::Graph third = builder.build(decodes(8, 3'002), other);
  EXPECT_EQ(ops_of(third)[0], ops_of(second)[0]) << "the dispatch depends on this rank's tokens only";
  EXPECT_NE(ops_of(third)[1], ops_of(second)[1]);
  EXPECT_EQ(ops_of(third)[1]->send_bytes, traffic.combine_row(1, other, kernels.combine_bytes_per_token()));
  EXPECT_EQ(lists_of(third)[3], b[3]) << "the gate depends on this rank's tokens only";
  const std::vector<std::int64_t> own{8, 7, 6, 0};
  const hal::Graph fourth = builder.build(decodes(7, 3'003), own);
  EXPECT_EQ(ops_of(fourth)[0]->send_bytes, traffic.dispatch_row(1, 7, kernels.dispatch_bytes_per_token()));
  EXPECT_EQ(ops_of(fourth)[1]->send_bytes, traffic.combine_row(1, own, kernels.combine_bytes_per_token()));
  EXPECT_NE(lists_of(fourth)[3], b[3]);
  EXPECT_EQ((*lists_of(fourth)[3])[0].flops * 8, (*b[3])[0].flops * 7) << "the gate GEMM scales with the tokens";
}

TEST_F(StepGraphBuilderTest, NewRankSharesRouteEveryRowAnew) {
  const std::vector<std::int64_t> tokens{8, 8, 5, 3};
  const hal::Graph before = builder.build(decodes(8, 3'000), tokens);
  traffic = MoeTraffic{{0.1, 0.2, 0.3, 0.4}, model.num_experts_per_tok};  // a rebalance, in place
  const hal::Graph after = builder.build(decodes(8, 3'001), tokens);
  EXPECT_NE(ops_of(after)[0]->send_bytes, ops_of(before)[0]->send_bytes);
  EXPECT_EQ(ops_of(after)[0]->send_bytes, traffic.dispatch_row(1, 8, kernels.dispatch_bytes_per_token()));
  EXPECT_EQ(ops_of(after)[1]->send_bytes, traffic.combine_row(1, tokens, kernels.combine_bytes_per_token()));
}

TEST_F(StepGraphBuilderTest, ALayerBodyIsRebuiltInPlaceOnlyOnceNoGraphHoldsIt) {
  const std::vector<std::int64_t> tokens{8, 8, 5, 0};
  const auto moe_body = [](const hal::Graph& g) { return std::get<hal::RepeatNode>(g.nodes()[1]).body; };
  const hal::Graph* body = nullptr;
  {
    const hal::Graph first = builder.build(decodes(8, 3'000), tokens);
    body = moe_body(first).get();
  }
  const hal::Graph second = builder.build(decodes(8, 3'001), tokens);
  EXPECT_EQ(moe_body(second).get(), body) << "reused";
  const auto held = lists_of(second);
  const hal::Graph third = builder.build(decodes(8, 3'002), tokens);
  EXPECT_NE(moe_body(third).get(), body) << "the second step's graph still holds it";
  EXPECT_EQ(lists_of(second), held) << "a graph's bodies never change under it";
}

TEST_F(StepGraphBuilderTest, AnIdleRankStillJoinsEveryAllToAll) {
  const hal::Graph g = builder.build(RankBatch{}, std::vector<std::int64_t>{8, 0, 5, 0});
  EXPECT_EQ(g.collective_count(), 2u * static_cast<std::size_t>(model.num_hidden_layers - model.first_k_dense_replace));
  for (const auto& l : lists_of(g)) EXPECT_FALSE(l->empty()) << "empty lists are left out";
}

TEST_F(StepGraphBuilderTest, AttentionDpWithMoeTpGathersEveryRanksTokensAroundTheExperts) {
  // GLM-5 over 4 GPUs, each its own DP rank, every expert split four ways: the 8 + 3 + 5 + 0 = 16
  // tokens of all ranks are all-gathered (16 x 6,144 x BF16 = 196,608 bytes) before each MoE layer's
  // experts and reduce-scattered after them; each GPU runs a quarter of every one of the 256 experts
  // over all 16 x 8 = 128 token-expert pairs.
  const StepGraphBuilder moe_tp{kernels, nullptr,
                                StepGraphOptions{.ep_group = nullptr,
                                                 .tp_group = nullptr,
                                                 .rank = 1,
                                                 .local_experts = 256,
                                                 .mtp = false,
                                                 .tp_rank = std::nullopt,
                                                 .moe_tp_group = group}};
  const std::vector<std::int64_t> tokens{8, 3, 5, 0};
  const hal::Graph g = moe_tp.build(decodes(3, 3'000), tokens);
  const auto moe_layers = static_cast<std::size_t>(model.num_hidden_layers - model.first_k_dense_replace);
  EXPECT_EQ(g.collective_count(), 2 * moe_layers);
  const auto ops = ops_of(g);
  ASSERT_FALSE(ops.empty());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(ops[i]->kind, i % 2 == 0 ? hal::CollectiveKind::all_gather : hal::CollectiveKind::reduce_scatter);
    EXPECT_EQ(ops[i]->bytes, 16u * 6'144 * 2);
  }
  std::vector<hal::KernelDesc> experts;
  kernels.routed_expert_slices(128, 4, experts);
  bool found = false;
  for (const auto& list : lists_of(g)) {
    for (const hal::KernelDesc& k : *list) {
      if (k.name != experts.front().name) continue;
      found = true;
      EXPECT_EQ(k.flops, experts.front().flops);
      EXPECT_EQ(k.bytes, experts.front().bytes);
    }
  }
  EXPECT_TRUE(found);
  // A rank without tokens still gathers the others' and runs its slice of the experts on them.
  EXPECT_EQ(moe_tp.build(RankBatch{}, std::vector<std::int64_t>{0, 0, 5, 0}).collective_count(), 2 * moe_layers);
}

}  // namespace
}  // namespace nvl::engine
