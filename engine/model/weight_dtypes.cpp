#include "engine/model/weight_dtypes.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace nvl::engine {

WeightDtypes weight_dtypes_from_name(std::string_view name) {
  using hal::DType;
  if (name == "fp8") return WeightDtypes{};
  if (name == "bf16") {
    return WeightDtypes{.attention = DType::bf16,
                        .routed_experts = DType::bf16,
                        .shared_experts = DType::bf16,
                        .dense = DType::bf16,
                        .embedding = DType::bf16};
  }
  if (name == "nvfp4") {
    return WeightDtypes{.attention = DType::bf16,
                        .routed_experts = DType::fp4,
                        .shared_experts = DType::fp4,
                        .dense = DType::fp4,
                        .embedding = DType::bf16};
  }
  throw std::invalid_argument("unknown weights '" + std::string(name) + "': expected \"bf16\", \"fp8\" or \"nvfp4\"");
}

std::uint64_t weight_bytes(std::int64_t params, hal::DType d) {
  const auto n = static_cast<std::uint64_t>(params);
  if (d == hal::DType::fp4) return n * 9 / 16;  // 4 bits a value and an 8-bit scale per 16 values
  return n * static_cast<std::uint64_t>(hal::bits_of(d)) / 8;
}

void check_weight_dtypes(const WeightDtypes& weights, const hal::DeviceInfo& device) {
  const std::pair<const char*, hal::DType> parts[] = {{"attention", weights.attention},
                                                      {"routed experts", weights.routed_experts},
                                                      {"shared experts", weights.shared_experts},
                                                      {"dense FFN", weights.dense},
                                                      {"embedding", weights.embedding}};
  for (const auto& [part, dtype] : parts) {
    if (device.has_peak(dtype)) continue;
    throw std::invalid_argument("weights: the " + std::string(part) + " in " + std::string(hal::to_string(dtype)) +
                                " need a " + std::string(hal::to_string(dtype)) + " tensor-core peak, and " +
                                device.name + " (GPU " + std::to_string(device.id) + ") has none");
  }
}

}  // namespace nvl::engine
