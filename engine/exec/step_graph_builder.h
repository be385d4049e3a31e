#pragma once
// Turns one rank's batch into the step graph its GPU launches: dense layers, the MoE layers as one
// repeated body (attention, gate and shared expert, dispatch, routed experts, combine), the MTP
// layer when drafting, and the head. Under IndexShare the layers that share the indexer form repeats
// of their own, after those that hold one: a step's time does not depend on the order of its layers,
// and every rank orders them alike, so their collectives still pair up. Under DP attention + EP each rank attends over its own batch
// and the EP all-to-alls join the ranks every layer; under TP the layer's outputs are all-reduced
// over the TP group instead. Under TP + EP every rank holds the whole batch after the attention's
// all-reduce and dispatches only its own slice of it (tokens_per_rank[rank]); one all-reduce after
// the combine then sums the shared expert's TP parts and every slice's routed output. The TP group
// may be the EP group itself (the prefill worker) or a part of it (attention TP inside a DP rank).
// Under attention DP + MoE TP every GPU all-gathers the tokens of all ranks, runs its slice of every
// expert on all of them, and reduce-scatters the outputs back to the GPUs they came from. Under
// single-batch overlap the combine carries the experts' down GEMM and the shared expert beside it.
#include <cstdint>
#include <memory>
#include <optional>
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
  // This rank in tp_group when that is not `rank`: attention TP inside a DP rank, whose TP group is a
  // few of the EP group's GPUs. Unset: `rank` (TP and EP over the same GPUs).
  std::optional<std::int32_t> tp_rank = std::nullopt;
  // Attention DP with MoE TP (TensorRT-LLM): every expert split over all of this group's GPUs, which
  // all-gather every DP rank's tokens before the experts and reduce-scatter the outputs back after
  // them; `rank` is this GPU in it. Null: the experts split by tp_group (or spread by ep_group).
  std::shared_ptr<hal::CommGroup> moe_tp_group = nullptr;
  // Single-batch overlap (SGLang's --enable-single-batch-overlap; with ep_group): the routed experts'
  // down GEMM and the shared expert run beside the combine, on `overlap_sm_fraction` of the SMs (its
  // send kernels hold the rest), so the combine's sending hides behind them.
  bool single_batch_overlap = false;
  double overlap_sm_fraction = 1.0;
  // With ep_group the TP group itself (dp 1), false: no dispatch or combine. Every GPU already holds all
  // the tokens after the attention all-reduce, runs its experts on those routed to them (the pairs its
  // slice would have received), and the MoE all-reduce sums the outputs, as TensorRT-LLM and vLLM run
  // EP without attention DP.
  bool ep_all_to_all = true;
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
  // This rank's part of the step's EP routing (the traffic's current version), shared by every layer of
  // the step.
  struct EpRouting {
    std::uint64_t version = 0;
    std::shared_ptr<const hal::CollectiveOp> dispatch;
    std::shared_ptr<const hal::CollectiveOp> combine;
    std::int64_t expert_tokens = 0;
    std::int64_t slots_hit = 0;
  };
  // One collective of a layer (the attention, dense FFN and MoE all-reduces; the MoE TP all-gather and
  // reduce-scatter), kept while its size stays the same.
  struct KeptCollective {
    hal::CollectiveKind kind;
    const char* name;
    std::shared_ptr<const hal::CollectiveOp> op;
  };
  // A kernel list kept, and shared by every graph, while the counts it was made for stay the same.
  struct KeptKernels {
    std::int64_t first = 0;
    std::int64_t second = 0;
    std::int64_t third = 0;
    hal::SharedKernels kernels;  // null: none yet
  };
  const EpRouting& ep_routing() const;
  // Without EP: the experts the step's tokens chose (every one without a routing), each split over the
  // GPUs that hold its slices.
  std::int64_t experts_hit() const;
  template <typename Fill>
  const hal::SharedKernels& kept(KeptKernels& k, std::int64_t first, std::int64_t second, Fill&& fill,
                                 std::int64_t third = 0) const;
  // The batch's attention kernels, the same in every layer that holds its indexer (or, with
  // `shares_indexer`, in every layer that shares one).
  hal::SharedKernels attention_kernels(const RankBatch& batch, bool shares_indexer) const;
  // `tokens` hidden states in BF16 over `group` (none when null or without tokens).
  void add_collective(hal::Graph& g, KeptCollective& kept, const std::shared_ptr<hal::CommGroup>& group,
                      std::int32_t rank, std::int64_t tokens) const;
  void add_all_reduce(hal::Graph& g, KeptCollective& all_reduce, std::int64_t tokens) const;
  // `attention`: the kernels of a layer that holds its indexer.
  hal::Graph main_layers(const RankBatch& batch, const hal::SharedKernels& attention,
                         std::span<const std::int64_t> tokens_per_rank, std::int64_t first_layer,
                         std::int64_t end_layer, bool with_head) const;
  // A layer body to fill: the last build's when no graph holds it any more (its room for nodes kept).
  hal::Graph& body(std::shared_ptr<hal::Graph>& kept, const char* name) const;
  // One dense layer over this rank's batch of `n` tokens, built into the body `into` (see body()).
  std::shared_ptr<const hal::Graph> dense_layer(std::int64_t n, const hal::SharedKernels& attention,
                                                std::shared_ptr<hal::Graph>& into) const;
  // One MoE layer over this rank's batch of `n` tokens, built into the body `into`; `decode_only`: the
  // batch has no prefill tokens (DeepEP's low-latency mode dispatches it).
  std::shared_ptr<const hal::Graph> moe_layer(std::int64_t n, const hal::SharedKernels& attention,
                                              std::span<const std::int64_t> tokens_per_rank, bool decode_only,
                                              std::shared_ptr<hal::Graph>& into) const;
  // The MoE layer under single-batch overlap: gate, dispatch, gate-up GEMM, then the combine with the
  // down GEMM and the shared expert beside it.
  std::shared_ptr<const hal::Graph> overlapped_moe_layer(std::int64_t n, const hal::SharedKernels& attention,
                                                         const EpRouting& routing,
                                                         std::shared_ptr<hal::Graph>& into) const;
  void add_head(hal::Graph& g, const RankBatch& batch) const;

  const LayerKernels& kernels_;
  const MoeTraffic* traffic_;
  StepGraphOptions opts_;
  mutable EpRouting routing_;
  mutable bool routing_valid_ = false;
  mutable KeptCollective attn_all_reduce_{hal::CollectiveKind::all_reduce, "attn.all_reduce", nullptr};
  mutable KeptCollective ffn_all_reduce_{hal::CollectiveKind::all_reduce, "ffn.all_reduce", nullptr};
  mutable KeptCollective moe_all_reduce_{hal::CollectiveKind::all_reduce, "moe.all_reduce", nullptr};
  mutable KeptCollective moe_gather_{hal::CollectiveKind::all_gather, "moe.all_gather", nullptr};
  mutable KeptCollective moe_scatter_{hal::CollectiveKind::reduce_scatter, "moe.reduce_scatter", nullptr};
  mutable KeptKernels ffn_, gate_and_shared_, experts_, head_;
  // Under single-batch overlap: the gate, the experts' gate-up GEMM, and the kernels beside the combine.
  mutable KeptKernels gate_, experts_gate_up_, beside_combine_;
  // Layer bodies; the *_shared_ ones for layers that share the indexer (IndexShare).
  mutable std::shared_ptr<hal::Graph> dense_body_, moe_body_, dense_shared_body_, moe_shared_body_;
  mutable std::size_t attention_size_ = 0;  // the last batch's, to size the next list
};

}  // namespace nvl::engine
