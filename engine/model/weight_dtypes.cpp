#include "engine/model/weight_dtypes.h"

#include <stdexcept>
#include <string>

namespace nvl::engine {

WeightDtypes weight_dtypes_from_name(std::string_view name) {
  WeightDtypes w;
  if (name == "fp8") return w;
  if (name == "bf16") {
    w.attention = w.experts = w.dense = hal::DType::bf16;
    return w;
  }
  if (name == "nvfp4") {
    w.experts = hal::DType::fp4;
    return w;
  }
  throw std::invalid_argument("weights '" + std::string(name) + "': expected bf16, fp8 or nvfp4");
}

}  // namespace nvl::engine
