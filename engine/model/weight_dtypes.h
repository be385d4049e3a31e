#pragma once
// The weight formats a pool can run (deployment.pools[i].weights), as the dtype of each part.
#include <string_view>

#include "engine/model/parallel_layout.h"

namespace nvl::engine {

// bf16: every part in BF16; fp8: block-scaled FP8 (as DeepGEMM), embedding and LM head in BF16;
// nvfp4: the routed experts in NVFP4, the rest as fp8 (as the Blackwell recipes run). Anything else is
// std::invalid_argument naming the allowed names.
WeightDtypes weight_dtypes_from_name(std::string_view name);

}  // namespace nvl::engine
