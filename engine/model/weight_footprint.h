#pragma once
// Weight bytes one GPU holds for a model under a parallel layout: the first number of the HBM budget
// (what is left after weights and activations is the KV cache).
#include <cstdint>
#include <vector>

#include "engine/model/model_profile.h"
#include "engine/model/parallel_layout.h"
#include "engine/model/weight_dtypes.h"

namespace nvl::engine {

struct WeightFootprint {
  std::uint64_t attention_bytes = 0;  // projections and DSA indexer, all layers
  std::uint64_t routed_expert_bytes = 0;
  std::uint64_t shared_expert_bytes = 0;  // shared experts and routers
  std::uint64_t dense_ffn_bytes = 0;
  std::uint64_t embedding_bytes = 0;  // embedding table and LM head
  std::uint64_t mtp_bytes = 0;        // MTP modules (a decoder layer and eh_proj each)
  std::int64_t expert_slots = 0;      // routed experts held per GPU (with redundancy)

  std::uint64_t total_bytes() const {
    return attention_bytes + routed_expert_bytes + shared_expert_bytes + dense_ffn_bytes + embedding_bytes +
           mtp_bytes;
  }
};

// The layers one pipeline stage runs, [first_layer, end_layer); the first stage also holds the embedding
// table, the last the head (final norm, LM head) and the MTP modules that follow it.
struct PipelineStage {
  std::int64_t first_layer = 0;
  std::int64_t end_layer = 0;
  bool first = true;
  bool last = true;
};

// The model's layers over `pp` stages: evenly, the remainder one each to the first stages (the last
// holds the LM head and MTP weights and runs the head, so it takes the fewer layers). A stage left
// without layers (pp above the layer count) or pp < 1 is std::invalid_argument.
std::vector<PipelineStage> pipeline_stages(const ModelProfile& m, std::int64_t pp);

// Throws std::invalid_argument when the layout cannot hold the model (experts that do not spread
// evenly over the EP group, a TP degree that does not divide the heads).
WeightFootprint weight_footprint_per_gpu(const ModelProfile& m, const ParallelLayout& layout, const WeightDtypes& dt);
// One GPU of a pipeline stage: its layers' share only (and the embedding or head its stage holds).
WeightFootprint weight_footprint_per_gpu(const ModelProfile& m, const ParallelLayout& layout, const WeightDtypes& dt,
                                         const PipelineStage& stage);

}  // namespace nvl::engine
