#pragma once
// Measured attention-module latencies of one GPU and kernel library, copied from aiconfigurator's silicon
// tables: a model's whole attention block on one rank, by projection GEMM dtype, KV dtype and local heads,
// over a grid of batch (sequences) x length, read as MeasuredGridTable says.
//   - GLM-5's DSA block (fused q_a/kv_a GEMM, q_b, the indexer's projections, scoring and top-k, the
//     attention over the top-k keys, o_proj): decode (dsa_decode_<library>.csv,
//     tools/calibration/import_dsa_decode_table.py), one query per sequence, length = kv_len, the sequence's
//     cached tokens; context (dsa_context_<library>.csv, import_dsa_context_table.py), a prefill with no
//     cached prefix, length = isl, each sequence's new tokens;
//   - DeepSeek-V3's MLA block in a prefill (fused q_a/kv_a GEMM, q_b, kv_b, the MHA-form attention, o_proj;
//     mla_context_<library>.csv, import_mla_context_table.py), length = isl as above; in decode (fused
//     q_a/kv_a GEMM, q_b, the absorbed BMMs, the latent attention, o_proj; mla_decode_module_<library>.csv,
//     import_mla_decode_module_table.py), length = kv_len as for DSA.
#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>

#include "fakegpu/measured_grid_table.h"

namespace nvl::fakegpu {

enum class ModulePhase { decode, context };

// An attention block a kernel list holds (find_dsa_module, find_mla_module), as the module tables key it.
struct AttentionModule {
  ModulePhase phase{};
  hal::DType gemm_dtype{};  // the projections'
  hal::DType kv_dtype{};    // the KV cache's
  std::int64_t heads = 0;   // local attention heads
  // Decode: queries (a sequence's MTP drafts count as more sequences of its length). Prefill: sequences.
  double batch = 0;
  // Decode: cached tokens per sequence, the new one included. Prefill: new tokens per sequence. Means.
  double length = 0;
  double prefix = 0;  // prefill: tokens each sequence had cached before this chunk (mean); decode: 0
};

class MeasuredAttentionModuleTable {
 public:
  using Roofline = MeasuredGridTable::Roofline;

  // Throws rt::InputError as MeasuredGridTable::load does.
  static MeasuredAttentionModuleTable load(const std::filesystem::path& file, ModulePhase phase);

  std::optional<double> time_ns(hal::DType gemm_dtype, hal::DType kv_dtype, std::int64_t heads, double batch,
                                double length, const Roofline& roofline) const {
    const std::array dtypes{gemm_dtype, kv_dtype};
    return grid_.time_ns(dtypes, heads, batch, length, roofline);
  }
  std::optional<double> longest_length(hal::DType gemm_dtype, hal::DType kv_dtype, std::int64_t heads,
                                       double batch) const {
    const std::array dtypes{gemm_dtype, kv_dtype};
    return grid_.longest_length(dtypes, heads, batch);
  }
  bool has(hal::DType gemm_dtype, hal::DType kv_dtype) const {
    const std::array dtypes{gemm_dtype, kv_dtype};
    return grid_.has(dtypes);
  }

 private:
  MeasuredGridTable grid_;
};

}  // namespace nvl::fakegpu
