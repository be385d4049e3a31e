#include "engine/hal/kernel.h"

#include <stdexcept>

namespace nvl::hal {

std::string_view to_string(KernelKind k) {
  switch (k) {
    case KernelKind::gemm: return "gemm";
    case KernelKind::moe_gemm: return "moe_gemm";
    case KernelKind::attn_prefill: return "attn_prefill";
    case KernelKind::attn_prefill_sparse: return "attn_prefill_sparse";
    case KernelKind::attn_decode: return "attn_decode";
    case KernelKind::indexer: return "indexer";
    case KernelKind::elementwise: return "elementwise";
    case KernelKind::sampler: return "sampler";
  }
  return "unknown";
}

KernelKind kernel_kind_from_string(std::string_view s) {
  for (int i = 0; i < kKernelKindCount; ++i) {
    const auto k = static_cast<KernelKind>(i);
    if (to_string(k) == s) return k;
  }
  throw std::invalid_argument("unknown kernel kind '" + std::string(s) +
                              "': expected gemm, moe_gemm, attn_prefill, attn_prefill_sparse, attn_decode, indexer, "
                              "elementwise or sampler");
}

}  // namespace nvl::hal
