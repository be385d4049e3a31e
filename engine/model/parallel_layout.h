#pragma once
// How one worker splits a model over its GPUs (and, from weight_dtypes.h, the dtype of each part of
// the weights).
#include <cstdint>

#include "engine/model/weight_dtypes.h"

namespace nvl::engine {

struct ParallelLayout {
  std::int64_t tp = 1;  // tensor parallel: attention, dense FFN, shared expert and vocab split tp ways
  std::int64_t dp = 1;  // data-parallel attention replicas (each holds attention / tp)
  // Expert parallel: routed experts spread over ep ranks. 1 = MoE TP: every expert split over all tp x dp
  // GPUs (at dp > 1, TensorRT-LLM's attention DP with MoE TP: the DP ranks' tokens are gathered first).
  std::int64_t ep = 1;
  std::int64_t redundant_experts = 0;  // extra routed-expert copies over the EP group (EPLB)

  std::int64_t gpus() const { return tp * dp; }
  // The ways each routed expert is split: 1 under EP (whole experts), all the GPUs under MoE TP.
  std::int64_t moe_tp() const { return ep > 1 ? 1 : gpus(); }
};

// The tokens TP rank t of a DP rank dispatches to the experts: its contiguous 1/tp of the rank's n.
// SGLang's DP attention with attention TP under DeepEP does the same ("scattered" MoE input): each
// attention-TP rank dispatches a disjoint slice of its DP rank's tokens, so no token is sent twice and
// a DP rank's dispatch bytes are what they are at tp 1, spread over its GPUs' links. SGLang gets there
// by a reduce-scatter after attention and an all-gather after the MoE (one all-reduce's bytes); here
// the step graph all-reduces after attention and after the combine, because the gate and the shared
// expert run on the whole batch split by tp as ParallelLayout holds them: one all-reduce per layer more
// than SGLang, a few microseconds on NVLink at decode batch sizes.
inline std::int64_t tp_slice(std::int64_t n, std::int64_t t, std::int64_t tp) { return n * (t + 1) / tp - n * t / tp; }

}  // namespace nvl::engine
