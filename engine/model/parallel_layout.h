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

}  // namespace nvl::engine
