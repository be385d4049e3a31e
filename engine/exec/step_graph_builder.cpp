#include "engine/exec/step_graph_builder.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace nvl::engine {

StepGraphBuilder::StepGraphBuilder(const LayerKernels& kernels, const MoeTraffic* traffic, StepGraphOptions opts)
    : kernels_(kernels), traffic_(traffic), opts_(std::move(opts)) {
  if (opts_.ep_group && traffic_ == nullptr) throw std::invalid_argument("step graph: EP needs the MoE traffic model");
}

const StepGraphBuilder::EpRouting& StepGraphBuilder::ep_routing(std::span<const std::int64_t> tokens_per_rank) const {
  const auto& shares = traffic_->shares();
  if (routing_valid_ && std::equal(tokens_per_rank.begin(), tokens_per_rank.end(), routing_.tokens_per_rank.begin(),
                                   routing_.tokens_per_rank.end()) && shares == routing_.shares) {
    return routing_;
  }
  routing_.tokens_per_rank.assign(tokens_per_rank.begin(), tokens_per_rank.end());
  routing_.shares = shares;
  routing_.dispatch_row = traffic_->dispatch_row(opts_.rank, tokens_per_rank[static_cast<std::size_t>(opts_.rank)],
                                                 kernels_.dispatch_bytes_per_token());
  routing_.combine_row = traffic_->combine_row(opts_.rank, tokens_per_rank, kernels_.combine_bytes_per_token());
  routing_.expert_tokens = traffic_->expert_tokens(opts_.rank, tokens_per_rank);
  routing_valid_ = true;
  return routing_;
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

void StepGraphBuilder::add_all_to_all(hal::Graph& g, hal::AllToAllRole role, const char* name,
                                      const std::vector<std::uint64_t>& send_bytes) const {
  hal::CollectiveOp op;
  op.kind = hal::CollectiveKind::all_to_all;
  op.role = role;
  op.name = name;
  op.send_bytes = send_bytes;
  g.add(hal::CollectiveCall{opts_.ep_group, opts_.rank, std::move(op)});
}

hal::Graph StepGraphBuilder::moe_layer(const RankBatch& batch, const std::vector<hal::KernelDesc>& attention,
                                       std::span<const std::int64_t> tokens_per_rank) const {
  hal::Graph layer("moe_layer");
  std::vector<hal::KernelDesc> ks;
  const std::int64_t n = batch.tokens();
  for (const hal::KernelDesc& k : attention) layer.add(k);
  add_all_reduce(layer, "attn.all_reduce", n);
  kernels_.moe_gate_and_shared(n, ks);
  add_kernels(layer, ks);
  if (opts_.ep_group) {
    const EpRouting& routing = ep_routing(tokens_per_rank);
    add_all_to_all(layer, hal::AllToAllRole::moe_dispatch, "moe.dispatch", routing.dispatch_row);
    kernels_.routed_experts(routing.expert_tokens, opts_.local_experts, ks);
    add_kernels(layer, ks);
    add_all_to_all(layer, hal::AllToAllRole::moe_combine, "moe.combine", routing.combine_row);
    add_all_reduce(layer, "moe.all_reduce", n);
  } else {
    // Without EP each rank holds 1/tp of every expert: the FLOPs and weight bytes of 1/tp of the
    // experts over all of the batch's token copies.
    const std::int64_t tp = opts_.tp_group ? static_cast<std::int64_t>(opts_.tp_group->members().size()) : 1;
    kernels_.routed_experts((n * kernels_.model().num_experts_per_tok + tp - 1) / tp, opts_.local_experts / tp, ks);
    add_kernels(layer, ks);
    add_all_reduce(layer, "moe.all_reduce", n);
  }
  return layer;
}

hal::Graph StepGraphBuilder::build(const RankBatch& batch, std::span<const std::int64_t> tokens_per_rank) const {
  const ModelProfile& m = kernels_.model();
  hal::Graph g = build_layers(batch, tokens_per_rank, 0, m.num_hidden_layers, true);
  if (opts_.mtp && m.num_nextn_predict_layers > 0) {
    // The MTP module is one more MoE decoder layer over the batch, then its own head.
    std::vector<hal::KernelDesc> attention, ks;
    kernels_.attention(batch, attention);
    g.add_repeat(moe_layer(batch, attention, tokens_per_rank), static_cast<std::size_t>(m.num_nextn_predict_layers));
    kernels_.head(batch.sampled_tokens(), ks);
    add_kernels(g, ks);
  }
  return g;
}

hal::Graph StepGraphBuilder::build_layers(const RankBatch& batch, std::span<const std::int64_t> tokens_per_rank,
                                          std::int64_t first_layer, std::int64_t end_layer, bool with_head) const {
  const ModelProfile& m = kernels_.model();
  if (first_layer < 0 || end_layer > m.num_hidden_layers || first_layer > end_layer) {
    throw std::invalid_argument("step graph: layers [" + std::to_string(first_layer) + ", " + std::to_string(end_layer) +
                                ") are not within the model's " + std::to_string(m.num_hidden_layers));
  }
  if (tokens_per_rank.size() <= static_cast<std::size_t>(opts_.rank)) {
    throw std::invalid_argument("step graph: tokens_per_rank has no entry for rank " + std::to_string(opts_.rank));
  }
  hal::Graph g("step");
  std::vector<hal::KernelDesc> attention, ks;
  kernels_.attention(batch, attention);
  const std::int64_t n = batch.tokens();
  const std::int64_t dense = std::max<std::int64_t>(0, std::min(end_layer, m.first_k_dense_replace) - first_layer);
  if (dense > 0 && n > 0) {
    hal::Graph layer("dense_layer");
    for (const hal::KernelDesc& k : attention) layer.add(k);
    add_all_reduce(layer, "attn.all_reduce", n);
    kernels_.dense_ffn(n, ks);
    add_kernels(layer, ks);
    add_all_reduce(layer, "ffn.all_reduce", n);
    g.add_repeat(std::move(layer), static_cast<std::size_t>(dense));
  }
  const std::int64_t moe = end_layer - std::max(first_layer, m.first_k_dense_replace);
  if (moe > 0) g.add_repeat(moe_layer(batch, attention, tokens_per_rank), static_cast<std::size_t>(moe));
  if (with_head) {
    kernels_.head(batch.sampled_tokens(), ks);
    add_kernels(g, ks);
  }
  return g;
}

}  // namespace nvl::engine
