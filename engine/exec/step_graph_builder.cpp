#include "engine/exec/step_graph_builder.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace nvl::engine {

namespace {
std::shared_ptr<const hal::CollectiveOp> all_to_all(hal::AllToAllRole role, const char* name,
                                                    std::vector<std::uint64_t> send_bytes) {
  hal::CollectiveOp op;
  op.kind = hal::CollectiveKind::all_to_all;
  op.role = role;
  op.name = name;
  op.send_bytes = std::move(send_bytes);
  return std::make_shared<const hal::CollectiveOp>(std::move(op));
}

void add_list(hal::Graph& g, const hal::SharedKernels& kernels) {
  if (!kernels->empty()) g.add(kernels);
}

// The batch as timelines show it; the worker numbers the step.
void label_batch(hal::StepLabel& label, const RankBatch& batch) {
  label.prefill_requests = static_cast<std::int32_t>(batch.prefills.size());
  label.decode_requests = static_cast<std::int32_t>(batch.decodes.size());
  for (const PrefillSpan& p : batch.prefills) {
    label.prefill_tokens += p.new_tokens;
    label.context_tokens += p.prior_tokens;
  }
  for (const DecodeSpan& d : batch.decodes) {
    label.decode_tokens += d.new_tokens;
    label.context_tokens += d.context_tokens;
  }
}
}  // namespace

StepGraphBuilder::StepGraphBuilder(const LayerKernels& kernels, const MoeTraffic* traffic, StepGraphOptions opts)
    : kernels_(kernels), traffic_(traffic), opts_(std::move(opts)) {
  if (opts_.ep_group && traffic_ == nullptr) throw std::invalid_argument("step graph: EP needs the MoE traffic model");
}

std::int64_t StepGraphBuilder::experts_hit() const {
  return traffic_ != nullptr ? traffic_->slots_hit(0) : kernels_.model().n_routed_experts;
}

const StepGraphBuilder::EpRouting& StepGraphBuilder::ep_routing() const {
  if (routing_valid_ && routing_.version == traffic_->version()) return routing_;
  routing_.dispatch = all_to_all(hal::AllToAllRole::moe_dispatch, "moe.dispatch",
                                 traffic_->dispatch_row(opts_.rank, kernels_.dispatch_bytes_per_token()));
  routing_.combine = all_to_all(hal::AllToAllRole::moe_combine, "moe.combine",
                                traffic_->combine_row(opts_.rank, kernels_.combine_bytes_per_token()));
  routing_.expert_tokens = traffic_->expert_pairs(opts_.rank);
  routing_.slots_hit = traffic_->slots_hit(opts_.rank);
  routing_.version = traffic_->version();
  routing_valid_ = true;
  return routing_;
}

template <typename Fill>
const hal::SharedKernels& StepGraphBuilder::kept(KeptKernels& k, std::int64_t first, std::int64_t second, Fill&& fill,
                                                 std::int64_t third) const {
  if (!k.kernels || k.first != first || k.second != second || k.third != third) {
    auto list = std::make_shared<std::vector<hal::KernelDesc>>();
    fill(*list);
    k = KeptKernels{first, second, third, std::move(list)};
  }
  return k.kernels;
}

hal::SharedKernels StepGraphBuilder::attention_kernels(const RankBatch& batch, bool shares_indexer) const {
  auto list = std::make_shared<std::vector<hal::KernelDesc>>();
  list->reserve(attention_size_);
  kernels_.attention(batch, shares_indexer, *list);
  if (!shares_indexer) attention_size_ = list->size();
  return list;
}

void StepGraphBuilder::add_collective(hal::Graph& g, KeptCollective& kept, const std::shared_ptr<hal::CommGroup>& group,
                                      std::int32_t rank, std::int64_t tokens) const {
  if (!group || tokens <= 0) return;
  const auto bytes = static_cast<std::uint64_t>(tokens * kernels_.model().hidden_size * 2);
  if (!kept.op || kept.op->bytes != bytes) {
    hal::CollectiveOp op;
    op.kind = kept.kind;
    op.name = kept.name;
    op.bytes = bytes;
    kept.op = std::make_shared<const hal::CollectiveOp>(std::move(op));
  }
  g.add(hal::CollectiveCall{group, rank, kept.op});
}

void StepGraphBuilder::add_all_reduce(hal::Graph& g, KeptCollective& all_reduce, std::int64_t tokens) const {
  add_collective(g, all_reduce, opts_.tp_group, opts_.tp_rank.value_or(opts_.rank), tokens);
}

hal::Graph& StepGraphBuilder::body(std::shared_ptr<hal::Graph>& kept, const char* name) const {
  if (kept && kept.use_count() == 1) {
    kept->clear();
  } else {
    kept = std::make_shared<hal::Graph>(name);
  }
  return *kept;
}

std::shared_ptr<const hal::Graph> StepGraphBuilder::dense_layer(std::int64_t n, const hal::SharedKernels& attention,
                                                                std::shared_ptr<hal::Graph>& into) const {
  hal::Graph& layer = body(into, "dense_layer");
  layer.reserve(4);  // attention, FFN and their all-reduces
  add_list(layer, attention);
  add_all_reduce(layer, attn_all_reduce_, n);
  add_list(layer, kept(ffn_, n, 0, [&](auto& out) { kernels_.dense_ffn(n, out); }));
  add_all_reduce(layer, ffn_all_reduce_, n);
  return into;
}

std::shared_ptr<const hal::Graph> StepGraphBuilder::moe_layer(std::int64_t n, const hal::SharedKernels& attention,
                                                              std::span<const std::int64_t> tokens_per_rank,
                                                              bool decode_only,
                                                              std::shared_ptr<hal::Graph>& into) const {
  const EpRouting* routing = opts_.ep_group ? &ep_routing() : nullptr;
  // Under attention DP + MoE TP the experts run on every rank's tokens, gathered.
  const std::int64_t gathered =
      opts_.moe_tp_group ? std::accumulate(tokens_per_rank.begin(), tokens_per_rank.end(), std::int64_t{0}) : n;
  if (routing != nullptr && opts_.single_batch_overlap) return overlapped_moe_layer(n, attention, *routing, into);
  const auto& gate_and_shared =
      kept(gate_and_shared_, n, 0, [&](auto& out) { kernels_.moe_gate_and_shared(n, out); });
  const hal::SharedKernels* experts = nullptr;
  const bool all_to_all = routing != nullptr && opts_.ep_all_to_all;
  if (routing != nullptr) {
    const std::int64_t expert_tokens = routing->expert_tokens;
    const std::int64_t hit = routing->slots_hit;
    const auto ep = static_cast<std::int64_t>(opts_.ep_group->members().size());
    // Without the all-to-alls every GPU of the EP group holds all `n` tokens and routes them itself.
    // Dispatched, the op is the group's tokens of which this rank computes its pairs: as many as pairs x
    // EP / top-k would give it balanced, so a rank the routing loads more reads as a bigger op.
    const hal::MoeFeed feed = !all_to_all ? hal::MoeFeed::routed_here
                              : decode_only ? hal::MoeFeed::deepep_low_latency
                                            : hal::MoeFeed::deepep_normal;
    const std::int64_t op_tokens = all_to_all ? expert_tokens * ep / kernels_.model().num_experts_per_tok : n;
    const hal::FusedMoeShape fused = kernels_.fused_moe(op_tokens, 1, ep, feed);
    experts = &kept(
        experts_, expert_tokens, hit, [&](auto& out) { kernels_.routed_experts(expert_tokens, hit, fused, out); },
        all_to_all ? static_cast<std::int64_t>(feed) : n);
  } else if (opts_.moe_tp_group) {
    const auto moe_tp = static_cast<std::int64_t>(opts_.moe_tp_group->members().size());
    const std::int64_t pairs = gathered * kernels_.model().num_experts_per_tok;
    const std::int64_t hit = experts_hit();
    experts = &kept(experts_, pairs, hit,
                    [&](auto& out) { kernels_.routed_expert_slices(pairs, moe_tp, hit, out); });
  } else {
    // Without EP each rank holds 1/tp of every expert: the FLOPs and weight bytes of 1/tp of the
    // experts chosen over all of the batch's token copies.
    const std::int64_t tp = opts_.tp_group ? static_cast<std::int64_t>(opts_.tp_group->members().size()) : 1;
    const std::int64_t expert_tokens = (n * kernels_.model().num_experts_per_tok + tp - 1) / tp;
    const std::int64_t read = (experts_hit() + tp - 1) / tp;
    const hal::FusedMoeShape fused = kernels_.fused_moe(n, tp, 1);
    experts = &kept(
        experts_, expert_tokens, read, [&](auto& out) { kernels_.routed_experts(expert_tokens, read, fused, out); },
        n);
  }

  hal::Graph& layer = body(into, "moe_layer");
  layer.reserve(7);  // three kernel lists and at most four collectives
  add_list(layer, attention);
  add_all_reduce(layer, attn_all_reduce_, n);
  add_list(layer, gate_and_shared);
  if (all_to_all) layer.add(hal::CollectiveCall{opts_.ep_group, opts_.rank, routing->dispatch});
  add_collective(layer, moe_gather_, opts_.moe_tp_group, opts_.rank, gathered);
  add_list(layer, *experts);
  if (all_to_all) layer.add(hal::CollectiveCall{opts_.ep_group, opts_.rank, routing->combine});
  add_collective(layer, moe_scatter_, opts_.moe_tp_group, opts_.rank, gathered);
  add_all_reduce(layer, moe_all_reduce_, n);
  return into;
}

std::shared_ptr<const hal::Graph> StepGraphBuilder::overlapped_moe_layer(std::int64_t n,
                                                                         const hal::SharedKernels& attention,
                                                                         const EpRouting& routing,
                                                                         std::shared_ptr<hal::Graph>& into) const {
  const std::int64_t pairs = routing.expert_tokens;
  const std::int64_t hit = routing.slots_hit;
  hal::Graph& layer = body(into, "moe_layer");
  layer.reserve(8);  // four kernel lists and at most four collectives
  add_list(layer, attention);
  add_all_reduce(layer, attn_all_reduce_, n);
  add_list(layer, kept(gate_, n, 0, [&](auto& out) { kernels_.moe_gate(n, out); }));
  layer.add(hal::CollectiveCall{opts_.ep_group, opts_.rank, routing.dispatch});
  add_list(layer, kept(experts_gate_up_, pairs, hit,
                       [&](auto& out) { kernels_.routed_experts_gate_up(pairs, hit, out); }));
  hal::CollectiveCall combine{opts_.ep_group, opts_.rank, routing.combine};
  combine.beside = kept(
      beside_combine_, pairs, hit,
      [&](auto& out) {
        kernels_.routed_experts_down(pairs, hit, out);
        kernels_.shared_expert(n, out);
      },
      n);
  combine.beside_sm_fraction = opts_.overlap_sm_fraction;
  layer.add(std::move(combine));
  add_all_reduce(layer, moe_all_reduce_, n);
  return into;
}

void StepGraphBuilder::add_head(hal::Graph& g, const RankBatch& batch) const {
  const std::int64_t sampled = batch.sampled_tokens();
  add_list(g, kept(head_, sampled, 0, [&](auto& out) { kernels_.head(sampled, out); }));
}

hal::Graph StepGraphBuilder::build(const RankBatch& batch, std::span<const std::int64_t> tokens_per_rank) const {
  const ModelProfile& m = kernels_.model();
  const hal::SharedKernels attention = attention_kernels(batch, false);
  hal::Graph g = main_layers(batch, attention, tokens_per_rank, 0, m.num_hidden_layers, true);
  if (opts_.mtp && m.num_nextn_predict_layers > 0) {
    // The MTP module is one more MoE decoder layer over the batch (its own indexer too), then its head.
    g.add_repeat(moe_layer(batch.tokens(), attention, tokens_per_rank, batch.prefills.empty(), moe_body_),
                 static_cast<std::size_t>(m.num_nextn_predict_layers));
    add_head(g, batch);
  }
  return g;
}

hal::Graph StepGraphBuilder::build_layers(const RankBatch& batch, std::span<const std::int64_t> tokens_per_rank,
                                          std::int64_t first_layer, std::int64_t end_layer, bool with_head) const {
  return main_layers(batch, attention_kernels(batch, false), tokens_per_rank, first_layer, end_layer, with_head);
}

hal::Graph StepGraphBuilder::main_layers(const RankBatch& batch, const hal::SharedKernels& attention,
                                         std::span<const std::int64_t> tokens_per_rank, std::int64_t first_layer,
                                         std::int64_t end_layer, bool with_head) const {
  const ModelProfile& m = kernels_.model();
  if (first_layer < 0 || end_layer > m.num_hidden_layers || first_layer > end_layer) {
    throw std::invalid_argument("step graph: layers [" + std::to_string(first_layer) + ", " + std::to_string(end_layer) +
                                ") are not within the model's " + std::to_string(m.num_hidden_layers));
  }
  if (tokens_per_rank.size() <= static_cast<std::size_t>(opts_.rank)) {
    throw std::invalid_argument("step graph: tokens_per_rank has no entry for rank " + std::to_string(opts_.rank));
  }
  hal::Graph g("step");
  label_batch(g.label(), batch);
  g.label().first_layer = first_layer;
  g.label().end_layer = end_layer;
  // The dense and MoE repeats (and those of their layers that share the indexer), the head, and the
  // MTP repeat and its head after them.
  g.reserve(7);
  const std::int64_t n = batch.tokens();
  const std::int64_t dense_end = std::min(end_layer, m.first_k_dense_replace);
  const std::int64_t moe_first = std::max(first_layer, m.first_k_dense_replace);
  const std::int64_t dense = std::max<std::int64_t>(0, dense_end - first_layer);
  const std::int64_t moe = std::max<std::int64_t>(0, end_layer - moe_first);
  const std::int64_t dense_shared = dense > 0 ? m.index_share_layers(first_layer, dense_end) : 0;
  const std::int64_t moe_shared = moe > 0 ? m.index_share_layers(moe_first, end_layer) : 0;
  const hal::SharedKernels shared =
      dense_shared + moe_shared > 0 ? attention_kernels(batch, true) : hal::SharedKernels{};
  const auto repeat = [&g](std::shared_ptr<const hal::Graph> layer, std::int64_t times) {
    g.add_repeat(std::move(layer), static_cast<std::size_t>(times));
  };
  if (n > 0) {
    if (dense > dense_shared) repeat(dense_layer(n, attention, dense_body_), dense - dense_shared);
    if (dense_shared > 0) repeat(dense_layer(n, shared, dense_shared_body_), dense_shared);
  }
  const bool decode_only = batch.prefills.empty();
  if (moe > moe_shared) repeat(moe_layer(n, attention, tokens_per_rank, decode_only, moe_body_), moe - moe_shared);
  if (moe_shared > 0) repeat(moe_layer(n, shared, tokens_per_rank, decode_only, moe_shared_body_), moe_shared);
  if (with_head) add_head(g, batch);
  return g;
}

}  // namespace nvl::engine
