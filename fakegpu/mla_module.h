#pragma once
// A dense MLA attention block in a prefill or decode kernel list, found so that a measured module table can
// time it whole: the tables measure DeepSeek-V3's attention as one module (prefill: aiconfigurator's
// mla_context_module and SGLang's wide-EP context MLA, SGLang's timed eagerly, launches included; decode:
// mla_generation_module and SGLang's wide-EP generation MLA, both replayed from a CUDA graph), the small
// projections and the norms, RoPE and quantisation between them included, which no sum of the kernels' own
// tables shows. Kimi K2's attention is the same block with 64 heads.
#include <cstdint>
#include <optional>
#include <span>

#include "engine/hal/kernel.h"
#include "fakegpu/measured_attention_module_table.h"

namespace nvl::fakegpu {

// The block `kernels` hold, if they are one layer's attention of a prefill-only or a decode-only step in
// DeepSeek-V3's geometry (the tables'): the fused q_a/kv_a GEMM of hidden 7168 into 1536 + 576, q_b, then
// either kv_b and one dense MHA-form prefill attention of 192-wide keys and 128-wide values, or one dense
// weight-absorbed decode attention over the 576-wide latent with its BMMs; o_proj; no other attention,
// indexer, MoE or sampler. Every kernel of the list but the elementwise ones (the input norm, which the
// modules do not include) belongs to the block.
std::optional<AttentionModule> find_mla_module(std::span<const hal::KernelDesc> kernels);

// DeepSeek-V3's geometry, which the module tables were measured in.
namespace deepseek_v3 {
inline constexpr std::int64_t kHidden = 7168;
inline constexpr std::int64_t kQLora = 1536;
inline constexpr std::int64_t kLatent = 512;
inline constexpr std::int64_t kRope = 64;
inline constexpr std::int64_t kQkNope = 128;
inline constexpr std::int64_t kVHead = 128;
}  // namespace deepseek_v3

}  // namespace nvl::fakegpu
