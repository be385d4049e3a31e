#pragma once
// A DSA attention block in a kernel list, found so that a measured module table can time it whole: the
// tables measure GLM-5's attention block as one module (aiconfigurator's dsa_generation_module and
// dsa_context_module), in which the indexer's top-k, the attention and the small projections overlap and
// fuse in ways no sum of the kernels' own tables shows.
#include <cstdint>
#include <optional>
#include <span>

#include "engine/hal/kernel.h"
#include "fakegpu/measured_attention_module_table.h"

namespace nvl::fakegpu {

// The block `kernels` hold, if they are one layer's attention in GLM-5's geometry (the tables'), of one
// phase: one indexer and either one sparse decode attention or one sparse prefill attention (a step that
// mixes both is neither), no MoE or sampler, and the fused q_a/kv_a GEMM of hidden 6144 into 2048 + 576.
// Every kernel of the list but the elementwise ones (the input norm, which the modules do not include)
// belongs to the block.
std::optional<AttentionModule> find_dsa_module(std::span<const hal::KernelDesc> kernels);

// GLM-5's geometry, which the module tables were measured in.
namespace glm5 {
inline constexpr std::int64_t kHidden = 6144;
inline constexpr std::int64_t kQLora = 2048;
inline constexpr std::int64_t kLatent = 512;
inline constexpr std::int64_t kRope = 64;
inline constexpr std::int64_t kQkNope = 192;
inline constexpr std::int64_t kVHead = 256;
inline constexpr std::int64_t kHeads = 64;
inline constexpr std::int64_t kIndexHeads = 32;
inline constexpr std::int64_t kIndexHeadDim = 128;
inline constexpr std::int64_t kIndexTopk = 2048;
}  // namespace glm5

}  // namespace nvl::fakegpu
