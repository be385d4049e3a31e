#pragma once
// Measured MLA decode attention latencies of one GPU and kernel library
// (fakegpu/profiles/measured/<gpu>/mla_decode_<library>.csv, copied from aiconfigurator's silicon tables
// by tools/calibration/import_mla_decode_table.py): weight-absorbed MLA in DeepSeek-V3's geometry, one
// query per sequence, by KV dtype and local heads, over a grid of batch (sequences) x kv_len (keys each
// query attends). Read as aiconfigurator reads its generation tables:
//   - exact KV dtype and heads, else no time (the caller prices the roofline);
//   - piecewise-linear in kv_len along each measured batch; below the shortest, its time (launch-bound);
//     beyond the longest measured, that point's utilisation (roofline time / measured time) held;
//   - piecewise-linear in batch between the two measured batches around it; beyond the largest, that
//     batch's utilisation held.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <vector>

#include "engine/hal/types.h"

namespace nvl::fakegpu {

class MeasuredMlaDecodeTable {
 public:
  // The roofline time (ns) of `batch` sequences of one query attending `kv_len` keys each, in the KV dtype
  // and heads asked for: what utilisations are relative to.
  using Roofline = std::function<double(double batch, double kv_len)>;

  // Throws rt::InputError naming the file and line for a missing file, a bad header, a row whose fields
  // are not a known dtype and positive numbers, or rows out of the importer's order.
  static MeasuredMlaDecodeTable load(const std::filesystem::path& file);

  std::optional<double> time_ns(hal::DType kv_dtype, std::int64_t heads, double batch, double kv_len,
                                const Roofline& roofline) const;
  bool has(hal::DType kv_dtype) const;

 private:
  struct Curve {
    std::int64_t batch = 0;
    std::vector<double> kv_len;  // ascending
    std::vector<double> ns;
  };
  struct Slice {
    hal::DType kv_dtype{};
    std::int64_t heads = 0;
    std::vector<Curve> curves;  // ascending in batch
  };
  static double curve_ns(const Curve& c, double kv_len, const Roofline& roofline);

  std::vector<Slice> slices_;  // in file order: by dtype name, heads
};

}  // namespace nvl::fakegpu
