#pragma once
// Turns one rank's batch into the step graph its GPU launches: dense layers, the MoE layers as one
// repeated body (attention, gate and shared expert, dispatch, routed experts, combine), the MTP
// layer when drafting, and the head. Under DP attention + EP each rank attends over its own batch
// and the EP all-to-alls join the ranks every layer; under TP the layer's outputs are all-reduced
// over the TP group instead. Under TP + EP every rank holds the whole batch after the attention's
// all-reduce and dispatches only its own slice of it (tokens_per_rank[rank]); one all-reduce after
// the combine then sums the shared expert's TP parts and every slice's routed output.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/exec/layer_kernels.h"
#include "engine/exec/moe_traffic.h"
#include "engine/exec/rank_batch.h"
#include "engine/hal/graph.h"

namespace nvl::engine {

struct StepGraphOptions {
  std::shared_ptr<hal::CommGroup> ep_group;  // null: no expert parallelism (experts split by TP)
  std::shared_ptr<hal::CommGroup> tp_group;  // null: tp == 1
  std::int32_t rank = 0;                      // this rank in ep_group (or tp_group)
  std::int64_t local_experts = 0;             // expert slots on this rank (all of them without EP)
  bool mtp = false;                           // run the MTP layer (draft tokens)
};

class StepGraphBuilder {
 public:
  StepGraphBuilder(const LayerKernels& kernels, const MoeTraffic* traffic, StepGraphOptions opts);

  // `tokens_per_rank`: every EP rank's token count this step (all DP ranks step together).
  hal::Graph build(const RankBatch& batch, std::span<const std::int64_t> tokens_per_rank) const;
  // Layers [first_layer, end_layer) of the main model only, then the head when `with_head`: a step
  // cut into layer groups, so the host learns when each group's KV is written.
  hal::Graph build_layers(const RankBatch& batch, std::span<const std::int64_t> tokens_per_rank,
                          std::int64_t first_layer, std::int64_t end_layer, bool with_head) const;

 private:
  // This rank's part of the EP routing for one set of token counts and rank shares: decode steps
  // repeat the same counts, so it is kept and reused while both stay the same.
  struct EpRouting {
    std::vector<std::int64_t> tokens_per_rank;
    std::vector<double> shares;
    std::vector<std::uint64_t> dispatch_row;
    std::vector<std::uint64_t> combine_row;
    std::int64_t expert_tokens = 0;
  };
  const EpRouting& ep_routing(std::span<const std::int64_t> tokens_per_rank) const;
  void add_kernels(hal::Graph& g, std::vector<hal::KernelDesc>& ks) const;
  void add_all_reduce(hal::Graph& g, const char* name, std::int64_t tokens) const;
  void add_all_to_all(hal::Graph& g, hal::AllToAllRole role, const char* name,
                      const std::vector<std::uint64_t>& send_bytes) const;
  // `attention`: the layer's attention kernels for the batch (the same in every layer).
  hal::Graph moe_layer(const RankBatch& batch, const std::vector<hal::KernelDesc>& attention,
                       std::span<const std::int64_t> tokens_per_rank) const;

  const LayerKernels& kernels_;
  const MoeTraffic* traffic_;
  StepGraphOptions opts_;
  mutable EpRouting routing_;
  mutable bool routing_valid_ = false;
};

}  // namespace nvl::engine
