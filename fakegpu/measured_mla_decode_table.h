#pragma once
// Measured MLA decode attention latencies of one GPU and kernel library
// (fakegpu/profiles/measured/<gpu>/mla_decode_<library>.csv, copied from aiconfigurator's silicon tables
// by tools/calibration/import_mla_decode_table.py): weight-absorbed MLA in DeepSeek-V3's geometry, one
// query per sequence, by KV dtype and local heads, over a grid of batch (sequences) x kv_len (keys each
// query attends), read as MeasuredGridTable says.
#include <cstdint>
#include <filesystem>
#include <optional>

#include "fakegpu/measured_grid_table.h"

namespace nvl::fakegpu {

class MeasuredMlaDecodeTable {
 public:
  using Roofline = MeasuredGridTable::Roofline;

  // Throws rt::InputError as MeasuredGridTable::load does.
  static MeasuredMlaDecodeTable load(const std::filesystem::path& file);

  std::optional<double> time_ns(hal::DType kv_dtype, std::int64_t heads, double batch, double kv_len,
                                const Roofline& roofline) const {
    return grid_.time_ns({&kv_dtype, 1}, heads, batch, kv_len, roofline);
  }
  bool has(hal::DType kv_dtype) const { return grid_.has({&kv_dtype, 1}); }

 private:
  MeasuredGridTable grid_;
};

}  // namespace nvl::fakegpu
