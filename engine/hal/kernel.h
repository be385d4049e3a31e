#pragma once
// What a kernel launch is to the hardware interface: its kind, dtype, the work it does and the shape of
// its operation. A CUDA implementation launches the real kernel; an emulated device prices it from these.
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/hal/kernel_shape.h"
#include "engine/hal/types.h"

namespace nvl::hal {

enum class KernelKind : std::uint8_t {
  gemm,                 // dense GEMM (projections, dense FFN, shared expert)
  moe_gemm,             // grouped GEMM over the local experts
  attn_prefill,         // dense / MLA prefill attention
  attn_prefill_sparse,  // DSA sparse prefill attention (top-k selected tokens)
  attn_decode,          // decode attention over the KV cache
  indexer,              // DSA lightning indexer (scores and top-k over cached keys)
  elementwise,          // norms, activations, rope, residual adds
  sampler,              // logits to tokens
};
inline constexpr int kKernelKindCount = 8;

std::string_view to_string(KernelKind k);
// Accepts the names to_string gives; anything else throws std::invalid_argument.
KernelKind kernel_kind_from_string(std::string_view s);

struct KernelDesc {
  KernelKind kind = KernelKind::elementwise;
  DType dtype = DType::bf16;
  std::uint64_t flops = 0;  // floating-point operations (a multiply-add counts 2)
  std::uint64_t bytes = 0;  // bytes read from and written to HBM
  std::string name;         // for the timeline and error messages
  KernelShape shape;        // none for norms, activations and the sampler
};

}  // namespace nvl::hal
