#pragma once
// Measured GEMM latencies of one GPU and kernel library (fakegpu/profiles/measured/<gpu>/gemm_<library>.csv,
// copied from aiconfigurator's silicon tables by tools/calibration/import_gemm_table.py), looked up by dtype
// and shape as aiconfigurator looks them up:
//   - each measured (n, k) is a site with a latency curve over m, read piecewise-linearly between the
//     measured m; beyond the last m the curve keeps its last point's utilisation (roofline time / measured
//     time), so the time grows as the roofline does;
//   - a shape off the sites takes the utilisation of the (up to) four nearest sites at its m, within two
//     octaves in log2 n and log2 k, weighted by inverse squared distance, and divides its own roofline
//     time by it;
//   - nothing within two octaves, or a dtype the table lacks: no time (the caller prices the roofline).
#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "engine/hal/device_info.h"
#include "engine/hal/types.h"

namespace nvl::fakegpu {

class MeasuredGemmTable {
 public:
  // The roofline time of an m x n x k GEMM in the dtype asked for (ns): what utilisations are relative to.
  using Roofline = std::function<double(std::int64_t m, std::int64_t n, std::int64_t k)>;

  // Throws rt::InputError naming the file and line for a missing file, a bad header, a row whose
  // fields are not a known dtype and positive numbers, or a row repeating an earlier key.
  static MeasuredGemmTable load(const std::filesystem::path& file);

  std::optional<double> time_ns(hal::DType dtype, std::int64_t m, std::int64_t n, std::int64_t k,
                                const Roofline& roofline) const;
  bool has(hal::DType dtype) const;
  std::size_t points() const;

 private:
  struct Site {
    std::int64_t n = 0, k = 0;
    std::vector<std::int64_t> m;  // ascending
    std::vector<double> ns;
  };
  // The sites an off-site (n, k) reads, nearest first: their distances in octaves and their indices in
  // sites_[dtype] (none: count 0).
  struct Neighbours {
    std::array<std::pair<double, std::size_t>, 4> nearest{};
    std::size_t count = 0;
  };

  double curve_ns(const Site& s, std::int64_t m, const Roofline& roofline) const;
  const Neighbours& neighbours(hal::DType dtype, std::int64_t n, std::int64_t k) const;

  std::vector<std::vector<Site>> sites_;  // by DType, each sorted by (n, k)
  // Each off-site shape's neighbours, found once: they depend on (dtype, n, k) alone, and a run asks for the
  // same few shapes at every m, step after step. Filled by const lookups: the emulator prices on one thread.
  mutable std::map<std::tuple<hal::DType, std::int64_t, std::int64_t>, Neighbours> neighbours_;
};

}  // namespace nvl::fakegpu
