#include "engine/model/weight_footprint.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace nvl::engine {

std::vector<PipelineStage> pipeline_stages(const ModelProfile& m, std::int64_t pp) {
  if (pp < 1 || pp > m.num_hidden_layers) {
    throw std::invalid_argument(m.name + ": " + std::to_string(pp) + " pipeline stages for " +
                                std::to_string(m.num_hidden_layers) + " layers (each stage needs at least one layer)");
  }
  std::vector<PipelineStage> stages;
  std::int64_t first = 0;
  for (std::int64_t s = 0; s < pp; ++s) {
    const std::int64_t layers = m.num_hidden_layers / pp + (s < m.num_hidden_layers % pp ? 1 : 0);
    stages.push_back(PipelineStage{first, first + layers, s == 0, s + 1 == pp});
    first += layers;
  }
  return stages;
}

WeightFootprint weight_footprint_per_gpu(const ModelProfile& m, const ParallelLayout& layout, const WeightDtypes& dt) {
  return weight_footprint_per_gpu(m, layout, dt, PipelineStage{0, m.num_hidden_layers, true, true});
}

WeightFootprint weight_footprint_per_gpu(const ModelProfile& m, const ParallelLayout& layout, const WeightDtypes& dt,
                                         const PipelineStage& stage) {
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
  if (stage.first_layer < 0 || stage.end_layer > m.num_hidden_layers || stage.first_layer >= stage.end_layer) {
    throw std::invalid_argument(m.name + ": pipeline stage of layers [" + std::to_string(stage.first_layer) + ", " +
                                std::to_string(stage.end_layer) + ") is not within its " +
                                std::to_string(m.num_hidden_layers) + " layers");
  }
  const std::int64_t layers = stage.end_layer - stage.first_layer;
  const std::int64_t dense_layers =
      std::max<std::int64_t>(0, std::min(stage.end_layer, m.first_k_dense_replace) - stage.first_layer);
  const std::int64_t moe_layers = layers - dense_layers;

  WeightFootprint w;
  const std::int64_t tp = layout.tp;
  // Projections of every layer of the stage; a DSA indexer only on the layers that hold one (IndexShare).
  w.attention_bytes = weight_bytes((layers * m.attention_params_per_layer() +
                                    m.indexer_layers(stage.first_layer, stage.end_layer) * m.indexer_params_per_layer()) /
                                       tp,
                                   dt.attention);

  // Under EP a GPU holds whole experts; without EP every expert is split over all the GPUs (moe_tp).
  std::int64_t routed_per_layer;
  if (layout.ep > 1) {
    w.expert_slots = slots_total / layout.ep;
    routed_per_layer = w.expert_slots * m.expert_params();
  } else {
    w.expert_slots = m.n_routed_experts;
    routed_per_layer = m.n_routed_experts * m.expert_params() / layout.moe_tp();
  }
  w.routed_expert_bytes = weight_bytes(moe_layers * routed_per_layer, dt.routed_experts);
  w.shared_expert_bytes = weight_bytes(moe_layers * m.shared_expert_params() / tp, dt.shared_experts) +
                          weight_bytes(moe_layers * m.router_params(), hal::DType::bf16);
  w.dense_ffn_bytes = weight_bytes(dense_layers * m.dense_ffn_params() / tp, dt.dense);
  w.embedding_bytes =
      weight_bytes(((stage.first ? m.embedding_params() : 0) + (stage.last ? m.lm_head_params() : 0)) / tp, dt.embedding);
  // Each MTP module is one MoE decoder layer (with its own indexer under DSA) plus the projection that
  // joins the embedding and hidden state.
  const std::int64_t mtp_attention = m.attention_params_per_layer() + m.indexer_params_per_layer();
  const std::uint64_t mtp_layer = weight_bytes(mtp_attention / tp, dt.attention) +
                                  weight_bytes(routed_per_layer, dt.routed_experts) +
                                  weight_bytes(m.shared_expert_params() / tp, dt.shared_experts) +
                                  weight_bytes(m.router_params(), hal::DType::bf16) +
                                  weight_bytes(m.mtp_extra_params() / tp, dt.dense);
  w.mtp_bytes = stage.last ? static_cast<std::uint64_t>(m.num_nextn_predict_layers) * mtp_layer : 0;
  return w;
}

}  // namespace nvl::engine
