#pragma once
// A DSA decode attention block in a kernel list, found so that a measured module table can time it whole:
// the tables measure GLM-5's decode attention block as one module (aiconfigurator's
// dsa_generation_module), in which the indexer's top-k, the sparse attention and the small projections
// overlap and fuse in ways no sum of the kernels' own tables shows.
#include <cstdint>
#include <optional>
#include <span>

#include "engine/hal/kernel.h"

namespace nvl::fakegpu {

struct DsaDecodeModule {
  hal::DType gemm_dtype{};  // the projections'
  hal::DType kv_dtype{};
  std::int64_t heads = 0;  // local attention heads
  double batch = 0;        // queries: a sequence's MTP drafts count as more sequences of its length
  double kv_len = 0;       // cached tokens per sequence, the new one included (the mean over the batch)
};

// The block `kernels` hold, if they are one layer's decode attention in GLM-5's geometry (the tables'):
// one indexer and one sparse decode attention, no prefill attention, the fused q_a/kv_a GEMM of hidden
// 6144 into 2048 + 576. Every kernel of the list but the elementwise ones (the input norm, which the
// module does not include) belongs to the block.
std::optional<DsaDecodeModule> find_dsa_decode_module(std::span<const hal::KernelDesc> kernels);

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
