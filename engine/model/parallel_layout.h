#pragma once
// How one worker splits a model over its GPUs (and, from weight_dtypes.h, the dtype of each part of
// the weights).
#include <cstdint>

#include "engine/model/weight_dtypes.h"

namespace nvl::engine {

struct ParallelLayout {
  std::int64_t tp = 1;  // tensor parallel: attention, dense FFN, shared expert and vocab split tp ways
  std::int64_t dp = 1;  // data-parallel attention replicas (each holds attention / tp)
  std::int64_t ep = 1;  // expert parallel: routed experts spread over ep ranks; 1 = experts split by tp
  std::int64_t redundant_experts = 0;  // extra routed-expert copies over the EP group (EPLB)

  std::int64_t gpus() const { return tp * dp; }
};

}  // namespace nvl::engine
