// Step graphs: every layer's kernels and the EP all-to-alls in order, with the kernel lists and
// collective ops that depend only on the token counts shared from one step to the next (so a device
// updating its exec prices again only what changed).
#include <gtest/gtest.h>

#include "engine/exec/step_graph_builder.h"

namespace nvl::engine {
namespace step_graph_builder_test {

// Members only: the builder never runs a collective.
class Members final : public hal::CommGroup {
 public:
  explicit Members(int n) {
    for (int i = 0; i < n; ++i) members_.push_back(i);
  }
  const std::string& name() const override { return name_; }
  const std::vector<hal::DeviceId>& members() const override { return members_; }
  void arrive(int, hal::SharedCollectiveOp, hal::CollectiveDone) override { ADD_FAILURE() << "not run here"; }
  void repeat(int, hal::SharedCollectiveOp, std::size_t, rt::Duration, rt::Duration, hal::CollectiveDone) override {
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
  // 256 experts, 64 on each rank: equally popular, they are dealt round the ranks (rank d holds experts
  // d, d + 4, d + 8, ...).
  ExpertPlacement placement{uniform_expert_load(256), kRanks, 0};
  MoeTraffic traffic{placement};
  // The routing a step's GPUs report: each of member m's tokens[m] tokens chooses two experts of every
  // rank (d and d + 4 of rank d), so member m sends 2 x tokens[m] pairs to each other rank.
  void route(const std::vector<std::int64_t>& tokens) {
    std::vector<std::vector<hal::RoutedExpert>> routed(kRanks);
    for (int m = 0; m < kRanks; ++m) {
      if (tokens[static_cast<std::size_t>(m)] == 0) continue;
      for (std::int32_t d = 0; d < kRanks; ++d) {
        for (std::int32_t e : {d, d + kRanks}) {
          routed[static_cast<std::size_t>(m)].push_back({e, static_cast<std::int32_t>(tokens[static_cast<std::size_t>(m)])});
        }
      }
    }
    traffic.assign(routed);
  }
  std::vector<std::uint64_t> bytes(std::vector<std::uint64_t> pairs, std::uint64_t per_pair) const {
    for (auto& p : pairs) p *= per_pair;
    return pairs;
  }
  std::shared_ptr<hal::CommGroup> group = std::make_shared<Members>(kRanks);
  StepGraphBuilder builder{kernels, &traffic,
                           StepGraphOptions{.ep_group = group, .tp_group = nullptr, .rank = 1, .local_experts = 64, .mtp = false}};
};

TEST_F(StepGraphBuilderTest, AStepHoldsEveryLayersKernelsAndTwoAllToAllsPerMoeLayer) {
  const RankBatch batch = decodes(8, 3'000);
  const std::vector<std::int64_t> tokens{8, 8, 5, 0};
  route(tokens);
  const hal::Graph g = builder.build(batch, tokens);
  std::vector<hal::KernelDesc> attention, ffn, gate, experts, head;
  kernels.attention(batch, false, attention);
  kernels.dense_ffn(8, ffn);
  kernels.moe_gate_and_shared(8, gate);
  // Rank 1 computes 2 pairs of each of the 21 tokens, over the two of its experts they chose.
  kernels.routed_experts(42, 2, std::nullopt, experts);
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
  EXPECT_EQ(ops[0]->send_bytes, bytes({16, 0, 16, 16}, kernels.dispatch_bytes_per_token()));
  EXPECT_EQ(ops[1]->role, hal::AllToAllRole::moe_combine);
  EXPECT_EQ(ops[1]->send_bytes, bytes({16, 0, 10, 0}, kernels.combine_bytes_per_token()));
  // Dense layer: attention and FFN; MoE layer: the same attention list, gate, experts; then the head.
  const auto lists = lists_of(g);
  ASSERT_EQ(lists.size(), 6u);
  EXPECT_EQ(lists[0], lists[2]) << "one attention list for every layer";
  EXPECT_EQ(lists[0]->size(), attention.size());
  EXPECT_EQ((*lists[4])[0].flops, experts[0].flops);
  EXPECT_EQ((*lists[4])[0].bytes, experts[0].bytes) << "the weights of the two experts chosen, not of all 64";
}

TEST_F(StepGraphBuilderTest, ConsecutiveStepsShareWhatTheirTokenCountsAndRoutingFix) {
  const std::vector<std::int64_t> tokens{8, 8, 5, 0};
  route(tokens);
  const hal::Graph first = builder.build(decodes(8, 3'000), tokens);
  const hal::Graph second = builder.build(decodes(8, 3'001), tokens);  // one token further, same routing
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

  // A step's new routing (the same counts drawn again) makes new all-to-alls; equal counts keep the lists.
  route(tokens);
  const hal::Graph third = builder.build(decodes(8, 3'002), tokens);
  EXPECT_NE(ops_of(third)[0], ops_of(second)[0]);
  EXPECT_EQ(ops_of(third)[0]->send_bytes, ops_of(second)[0]->send_bytes);
  EXPECT_EQ(lists_of(third)[4], b[4]) << "the same pairs over the same experts: the same expert GEMM";
  const std::vector<std::int64_t> own{8, 7, 6, 0};
  route(own);
  const hal::Graph fourth = builder.build(decodes(7, 3'003), own);
  EXPECT_EQ(ops_of(fourth)[0]->send_bytes, bytes({14, 0, 14, 14}, kernels.dispatch_bytes_per_token()));
  EXPECT_EQ(ops_of(fourth)[1]->send_bytes, bytes({16, 0, 12, 0}, kernels.combine_bytes_per_token()));
  EXPECT_NE(lists_of(fourth)[3], b[3]);
  EXPECT_EQ((*lists_of(fourth)[3])[0].flops * 8, (*b[3])[0].flops * 7) << "the gate GEMM scales with the tokens";
}

TEST_F(StepGraphBuilderTest, ANewPlacementRoutesEveryRowAnew) {
  const std::vector<std::int64_t> tokens{8, 8, 5, 3};
  route(tokens);
  const hal::Graph before = builder.build(decodes(8, 3'000), tokens);
  // A rebalance, in place (here to an even placement again): the next step's routing is over it.
  traffic.set_placement(ExpertPlacement(uniform_expert_load(256), kRanks, 0));
  route(tokens);
  const hal::Graph after = builder.build(decodes(8, 3'001), tokens);
  EXPECT_NE(ops_of(after)[0], ops_of(before)[0]);
  EXPECT_EQ(ops_of(after)[0]->send_bytes, bytes({16, 0, 16, 16}, kernels.dispatch_bytes_per_token()));
  EXPECT_EQ(ops_of(after)[1]->send_bytes, bytes({16, 0, 10, 6}, kernels.combine_bytes_per_token()));
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

TEST_F(StepGraphBuilderTest, AStepIsLabelledWithItsBatchForTimelines) {
  RankBatch batch = decodes(3, 1'000);
  batch.prefills.push_back(PrefillSpan{.prior_tokens = 512, .new_tokens = 2'048, .samples = true});
  const std::vector<std::int64_t> tokens{2'051, 0, 0, 0};
  route(tokens);
  const hal::StepLabel l = builder.build(batch, tokens).label();
  EXPECT_STREQ(l.kind(), "mixed");
  EXPECT_EQ(l.prefill_requests, 1);
  EXPECT_EQ(l.decode_requests, 3);
  EXPECT_EQ(l.prefill_tokens, 2'048);
  EXPECT_EQ(l.decode_tokens, 3);
  EXPECT_EQ(l.context_tokens, 512 + 1'000 + 1'100 + 1'200) << "the cached prefix and every decode's context";
  EXPECT_EQ(l.first_layer, 0);
  EXPECT_EQ(l.end_layer, model.num_hidden_layers);
  EXPECT_EQ(l.step, -1) << "the worker numbers the step";
  const hal::StepLabel idle = builder.build_layers(RankBatch{}, tokens, 3, 9, false).label();
  EXPECT_STREQ(idle.kind(), "idle");
  EXPECT_EQ(idle.first_layer, 3);
  EXPECT_EQ(idle.end_layer, 9);
}

TEST_F(StepGraphBuilderTest, EpOverTheTpGroupWithoutAllToAllsKeepsTheExpertsAndDropsTheDispatchAndCombine) {
  // TP4 + EP4 at dp 1: the batch is on every GPU, rank 1's slice would be tokens[1]; without all-to-alls
  // rank 1 runs its experts on the same pairs and only the two all-reduces of each layer are left.
  const StepGraphBuilder replicated{kernels, &traffic,
                                    StepGraphOptions{.ep_group = group,
                                                     .tp_group = group,
                                                     .rank = 1,
                                                     .local_experts = 64,
                                                     .mtp = false,
                                                     .ep_all_to_all = false}};
  const StepGraphBuilder dispatching{kernels, &traffic,
                                     StepGraphOptions{.ep_group = group, .tp_group = group, .rank = 1, .local_experts = 64}};
  const std::vector<std::int64_t> tokens{4, 4, 4, 4};
  route(tokens);
  const RankBatch batch = decodes(16, 3'000);
  const hal::Graph g = replicated.build(batch, tokens);
  const hal::Graph a2a = dispatching.build(batch, tokens);
  const auto layers = static_cast<std::size_t>(model.num_hidden_layers);
  const auto moe = layers - static_cast<std::size_t>(model.first_k_dense_replace);
  EXPECT_EQ(g.collective_count(), 2 * layers) << "the attention and FFN/MoE all-reduces of every layer";
  EXPECT_EQ(a2a.collective_count(), 2 * layers + 2 * moe);
  for (const auto& op : ops_of(g)) EXPECT_EQ(op->kind, hal::CollectiveKind::all_reduce);
  EXPECT_EQ(g.kernel_count(), a2a.kernel_count());
  const auto lists = lists_of(g), a2a_lists = lists_of(a2a);
  ASSERT_EQ(lists.size(), a2a_lists.size());
  for (std::size_t i = 0; i < lists.size(); ++i) {
    for (std::size_t k = 0; k < lists[i]->size(); ++k) EXPECT_EQ((*lists[i])[k].bytes, (*a2a_lists[i])[k].bytes);
  }
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
  kernels.routed_expert_slices(128, 4, 256, experts);  // no routing given: every expert read
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

// The routed experts' fused op, as the graph launches it (none where the tokens arrive dispatched).
std::optional<hal::FusedMoeShape> fused_op_of(const hal::Graph& g) {
  for (const auto& list : lists_of(g)) {
    for (const hal::KernelDesc& k : *list) {
      if (k.kind == hal::KernelKind::moe_gemm) return std::get<hal::GroupedGemmShape>(k.shape).fused;
    }
  }
  ADD_FAILURE() << "no routed experts";
  return std::nullopt;
}

TEST_F(StepGraphBuilderTest, TheMoeOpIsNamedWithHowItsTokensArrive) {
  const std::vector<std::int64_t> tokens{4, 4, 4, 4};
  route(tokens);
  const RankBatch batch = decodes(16, 3'000);
  const auto expect_op = [&](const hal::Graph& g, std::int64_t n, std::int64_t tp, std::int64_t ep,
                             hal::MoeFeed feed = hal::MoeFeed::routed_here) {
    const auto op = fused_op_of(g);
    ASSERT_TRUE(op.has_value());
    EXPECT_EQ(op->feed, feed);
    EXPECT_EQ(op->tokens, n);
    EXPECT_EQ(op->tp, tp);
    EXPECT_EQ(op->ep, ep);
    EXPECT_EQ(op->topk, model.num_experts_per_tok);
    EXPECT_EQ(op->experts, model.n_routed_experts);
    EXPECT_EQ(op->expert_inter, model.moe_intermediate_size);
  };
  // EP with all-to-alls: DeepEP dispatches rank 1 two pairs of each of the group's 16 tokens, 32 pairs,
  // its balanced share of an op of 32 x 4 / 8 = 16 tokens; low-latency mode for a batch of decodes only,
  // normal mode once it holds a prefill chunk.
  expect_op(builder.build(batch, tokens), 16, 1, 4, hal::MoeFeed::deepep_low_latency);
  RankBatch mixed = decodes(15, 3'000);
  mixed.prefills.push_back(PrefillSpan{0, 1, true});
  expect_op(builder.build(mixed, tokens), 16, 1, 4, hal::MoeFeed::deepep_normal);
  // EP over the TP group without all-to-alls: all 16 tokens on every GPU, experts split 4 ways across.
  const StepGraphBuilder replicated{kernels, &traffic,
                                    StepGraphOptions{.ep_group = group, .tp_group = group, .rank = 1,
                                                     .local_experts = 64, .mtp = false, .ep_all_to_all = false}};
  expect_op(replicated.build(batch, tokens), 16, 1, 4);
  // TP4 without EP: every expert split 4 ways within, over the batch's 16 tokens.
  const LayerKernels tp4{model, 4, WeightDtypes{}, hal::DType::fp8};
  const StepGraphBuilder tensor{tp4, nullptr,
                                StepGraphOptions{.ep_group = nullptr, .tp_group = group, .rank = 1,
                                                 .local_experts = 256, .mtp = false}};
  expect_op(tensor.build(batch, tokens), 16, 4, 1);
  // Attention DP + MoE TP: the 8 + 3 + 5 + 0 gathered tokens, every expert split 4 ways within.
  const StepGraphBuilder moe_tp{kernels, nullptr,
                                StepGraphOptions{.ep_group = nullptr, .tp_group = nullptr, .rank = 1,
                                                 .local_experts = 256, .mtp = false, .tp_rank = std::nullopt,
                                                 .moe_tp_group = group}};
  expect_op(moe_tp.build(decodes(3, 3'000), std::vector<std::int64_t>{8, 3, 5, 0}), 16, 4, 1);
}

}  // namespace step_graph_builder_test
}  // namespace nvl::engine
