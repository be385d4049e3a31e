#include "engine/hal/types.h"

#include <stdexcept>
#include <string>

namespace nvl::hal {

std::string_view to_string(DType d) {
  switch (d) {
    case DType::fp4: return "fp4";
    case DType::fp8: return "fp8";
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
    case DType::fp32: return "fp32";
    case DType::int8: return "int8";
  }
  return "unknown";
}

DType dtype_from_string(std::string_view s) {
  for (DType d : {DType::fp4, DType::fp8, DType::bf16, DType::fp16, DType::fp32, DType::int8}) {
    if (to_string(d) == s) return d;
  }
  throw std::invalid_argument("unknown dtype '" + std::string(s) + "': expected fp4, fp8, bf16, fp16, fp32 or int8");
}

int bits_of(DType d) {
  switch (d) {
    case DType::fp4: return 4;
    case DType::fp8: return 8;
    case DType::int8: return 8;
    case DType::bf16: return 16;
    case DType::fp16: return 16;
    case DType::fp32: return 32;
  }
  return 0;
}

std::string_view to_string(Xid x) {
  switch (x) {
    case Xid::none: return "none";
    case Xid::ecc_uncorrectable: return "Xid 48 (uncorrectable ECC)";
    case Xid::nvlink_error: return "Xid 74 (NVLink error)";
    case Xid::gpu_lost: return "Xid 79 (GPU has fallen off the bus)";
  }
  return "unknown Xid";
}

}  // namespace nvl::hal
