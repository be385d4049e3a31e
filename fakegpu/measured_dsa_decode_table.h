#pragma once
// Measured DSA decode attention-module latencies of one GPU and kernel library
// (fakegpu/profiles/measured/<gpu>/dsa_decode_<library>.csv, copied from aiconfigurator's silicon tables by
// tools/calibration/import_dsa_decode_table.py): GLM-5's whole decode attention block on one rank (fused
// q_a/kv_a GEMM, q_b, the indexer's projections, scoring and top-k, sparse MLA over the top-k keys, the
// absorbed BMMs and o_proj), one query per sequence, by projection GEMM dtype, KV dtype and local heads,
// over a grid of batch (sequences) x kv_len (each sequence's cached tokens), read as MeasuredGridTable says.
#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>

#include "fakegpu/measured_grid_table.h"

namespace nvl::fakegpu {

class MeasuredDsaDecodeTable {
 public:
  using Roofline = MeasuredGridTable::Roofline;

  // Throws rt::InputError as MeasuredGridTable::load does.
  static MeasuredDsaDecodeTable load(const std::filesystem::path& file);

  std::optional<double> time_ns(hal::DType gemm_dtype, hal::DType kv_dtype, std::int64_t heads, double batch,
                                double kv_len, const Roofline& roofline) const {
    const std::array dtypes{gemm_dtype, kv_dtype};
    return grid_.time_ns(dtypes, heads, batch, kv_len, roofline);
  }
  bool has(hal::DType gemm_dtype, hal::DType kv_dtype) const {
    const std::array dtypes{gemm_dtype, kv_dtype};
    return grid_.has(dtypes);
  }

 private:
  MeasuredGridTable grid_;
};

}  // namespace nvl::fakegpu
