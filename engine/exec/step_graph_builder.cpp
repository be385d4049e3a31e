#include "engine/exec/step_graph_builder.h"

#include <stdexcept>

namespace nvl::engine {

StepGraphBuilder::StepGraphBuilder(const LayerKernels& kernels, const MoeTraffic* traffic, StepGraphOptions opts)
    : kernels_(kernels), traffic_(traffic), opts_(std::move(opts)) {
  if (opts_.ep_group && traffic_ == nullptr) throw std::invalid_argument("step graph: EP needs the MoE traffic model");
}

void StepGraphBuilder::add_kernels(hal::Graph& g, std::vector<hal::KernelDesc>& ks) const {
  for (auto& k : ks) g.add(std::move(k));
  ks.clear();
}

void StepGraphBuilder::add_all_reduce(hal::Graph& g, const char* name, std::int64_t tokens) const {
  if (!opts_.tp_group || tokens <= 0) return;
  hal::CollectiveOp op;
  op.kind = hal::CollectiveKind::all_reduce;
  op.name = name;
  op.bytes = static_cast<std::uint64_t>(tokens * kernels_.model().hidden_size * 2);
  g.add(hal::CollectiveCall{opts_.tp_group, opts_.rank, std::move(op)});
}

hal::Graph StepGraphBuilder::moe_layer(const RankBatch& batch, std::span<const std::int64_t> tokens_per_rank) const {
  hal::Graph layer("moe_layer");
  std::vector<hal::KernelDesc> ks;
  const std::int64_t n = batch.tokens();
  kernels_.attention(batch, ks);
  add_kernels(layer, ks);
  add_all_reduce(layer, "attn.all_reduce", n);
  kernels_.moe_gate_and_shared(n, ks);
  add_kernels(layer, ks);
  if (opts_.ep_group) {
    hal::CollectiveOp dispatch;
    dispatch.kind = hal::CollectiveKind::all_to_all;
    dispatch.role = hal::AllToAllRole::moe_dispatch;
    dispatch.name = "moe.dispatch";
    dispatch.send_bytes = traffic_->dispatch_row(opts_.rank, n, kernels_.dispatch_bytes_per_token());
    layer.add(hal::CollectiveCall{opts_.ep_group, opts_.rank, std::move(dispatch)});
    kernels_.routed_experts(traffic_->expert_tokens(opts_.rank, tokens_per_rank), opts_.local_experts, ks);
    add_kernels(layer, ks);
    hal::CollectiveOp combine;
    combine.kind = hal::CollectiveKind::all_to_all;
    combine.role = hal::AllToAllRole::moe_combine;
    combine.name = "moe.combine";
    combine.send_bytes = traffic_->combine_row(opts_.rank, tokens_per_rank, kernels_.combine_bytes_per_token());
    layer.add(hal::CollectiveCall{opts_.ep_group, opts_.rank, std::move(combine)});
  } else {
    kernels_.routed_experts(n * kernels_.model().num_experts_per_tok, opts_.local_experts, ks);
    add_kernels(layer, ks);
    add_all_reduce(layer, "moe.all_reduce", n);
  }
  return layer;
}

hal::Graph StepGraphBuilder::build(const RankBatch& batch, std::span<const std::int64_t> tokens_per_rank) const {
  const ModelProfile& m = kernels_.model();
  hal::Graph g("step");
  std::vector<hal::KernelDesc> ks;
  const std::int64_t n = batch.tokens();
  if (m.first_k_dense_replace > 0 && n > 0) {
    hal::Graph dense("dense_layer");
    kernels_.attention(batch, ks);
    add_kernels(dense, ks);
    add_all_reduce(dense, "attn.all_reduce", n);
    kernels_.dense_ffn(n, ks);
    add_kernels(dense, ks);
    add_all_reduce(dense, "ffn.all_reduce", n);
    g.add_repeat(std::move(dense), static_cast<std::size_t>(m.first_k_dense_replace));
  }
  g.add_repeat(moe_layer(batch, tokens_per_rank), static_cast<std::size_t>(m.moe_layers()));
  kernels_.head(batch.sampled_tokens(), ks);
  add_kernels(g, ks);
  if (opts_.mtp && m.num_nextn_predict_layers > 0) {
    // The MTP module is one more MoE decoder layer over the batch, then its own head.
    g.add_repeat(moe_layer(batch, tokens_per_rank), static_cast<std::size_t>(m.num_nextn_predict_layers));
    kernels_.head(batch.sampled_tokens(), ks);
    add_kernels(g, ks);
  }
  return g;
}

}  // namespace nvl::engine
