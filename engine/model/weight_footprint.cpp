#include "engine/model/weight_footprint.h"

#include <stdexcept>
#include <string>

namespace nvl::engine {

WeightFootprint weight_footprint_per_gpu(const ModelProfile& m, const ParallelLayout& layout, const WeightDtypes& dt) {
  if (layout.tp < 1 || layout.dp < 1 || layout.ep < 1 || layout.redundant_experts < 0) {
    throw std::invalid_argument("parallel layout: tp, dp and ep must be at least 1, redundant experts not negative");
  }
  if (m.num_attention_heads % layout.tp != 0) {
    throw std::invalid_argument(m.name + ": tp " + std::to_string(layout.tp) + " does not divide " +
                                std::to_string(m.num_attention_heads) + " attention heads");
  }
  const std::int64_t slots_total = m.n_routed_experts + layout.redundant_experts;
  if (layout.ep > 1 && slots_total % layout.ep != 0) {
    throw std::invalid_argument(m.name + ": " + std::to_string(m.n_routed_experts) + " routed experts + " +
                                std::to_string(layout.redundant_experts) + " redundant do not spread evenly over EP" +
                                std::to_string(layout.ep) + " (add redundant experts to make the count divisible)");
  }
  if (layout.ep == 1 && layout.redundant_experts > 0) {
    throw std::invalid_argument("redundant experts need expert parallelism (ep > 1)");
  }

  WeightFootprint w;
  const std::int64_t tp = layout.tp;
  w.attention_bytes = weight_bytes(m.all_layers_attention_params() / tp, dt.attention);

  // Under EP a GPU holds whole experts; without EP every expert is split tp ways.
  std::int64_t routed_per_layer;
  if (layout.ep > 1) {
    w.expert_slots = slots_total / layout.ep;
    routed_per_layer = w.expert_slots * m.expert_params();
  } else {
    w.expert_slots = m.n_routed_experts;
    routed_per_layer = m.n_routed_experts * m.expert_params() / tp;
  }
  w.routed_expert_bytes = weight_bytes(m.moe_layers() * routed_per_layer, dt.routed_experts);
  w.shared_expert_bytes = weight_bytes(m.moe_layers() * m.shared_expert_params() / tp, dt.shared_experts) +
                          weight_bytes(m.moe_layers() * m.router_params(), hal::DType::bf16);
  w.dense_ffn_bytes = weight_bytes(m.first_k_dense_replace * m.dense_ffn_params() / tp, dt.dense);
  w.embedding_bytes = weight_bytes((m.embedding_params() + m.lm_head_params()) / tp, dt.embedding);
  // Each MTP module is one MoE decoder layer (with its own indexer under DSA) plus the projection that
  // joins the embedding and hidden state.
  const std::int64_t mtp_attention = m.attention_params_per_layer() + m.indexer_params_per_layer();
  const std::uint64_t mtp_layer = weight_bytes(mtp_attention / tp, dt.attention) +
                                  weight_bytes(routed_per_layer, dt.routed_experts) +
                                  weight_bytes(m.shared_expert_params() / tp, dt.shared_experts) +
                                  weight_bytes(m.router_params(), hal::DType::bf16) +
                                  weight_bytes(m.mtp_extra_params() / tp, dt.dense);
  w.mtp_bytes = static_cast<std::uint64_t>(m.num_nextn_predict_layers) * mtp_layer;
  return w;
}

}  // namespace nvl::engine
