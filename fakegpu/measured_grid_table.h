#pragma once
// Measured latencies of one GPU and kernel library over a grid of batch (sequences) x length (keys each
// sequence holds), by dtypes and local heads: the shape of aiconfigurator's generation tables. Read as
// aiconfigurator reads them:
//   - exact dtypes and heads, else no time (the caller prices another way);
//   - piecewise-linear in length along each measured batch; below the shortest, its time (launch-bound);
//     beyond the longest measured, that point's utilisation (roofline time / measured time) held;
//   - piecewise-linear in batch between the two measured batches around it; beyond the largest, that
//     batch's utilisation held.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/hal/types.h"

namespace nvl::fakegpu {

class MeasuredGridTable {
 public:
  // The roofline time (ns) of `batch` sequences of `length` keys each, in the dtypes and heads asked for:
  // what utilisations are relative to.
  using Roofline = std::function<double(double batch, double length)>;

  // A file of `dtype_columns` dtype columns, then heads, batch, length and latency_us, as `header` names
  // them; rows sorted by those columns. Throws rt::InputError naming `what` or the file and line for a
  // missing file, a bad header, a row whose fields are not known dtypes and positive numbers, or rows out
  // of order.
  static MeasuredGridTable load(const std::filesystem::path& file, const std::string& what, const std::string& header,
                                std::size_t dtype_columns);

  // `dtypes`: one per dtype column, in the file's order.
  std::optional<double> time_ns(std::span<const hal::DType> dtypes, std::int64_t heads, double batch, double length,
                                const Roofline& roofline) const;
  // The longest length measured on every batch curve `batch` is read from (the two around it, or the
  // first or last alone outside them), so that up to it the time is read within measured lengths; none
  // for dtypes or heads the table lacks.
  std::optional<double> longest_length(std::span<const hal::DType> dtypes, std::int64_t heads, double batch) const;
  // Whether any rows have these leading dtypes (a prefix of the dtype columns).
  bool has(std::span<const hal::DType> dtypes) const;

 private:
  struct Curve {
    std::int64_t batch = 0;
    std::vector<double> length;  // ascending
    std::vector<double> ns;
  };
  struct Slice {
    std::vector<hal::DType> dtypes;
    std::int64_t heads = 0;
    std::vector<Curve> curves;  // ascending in batch
  };
  static double curve_ns(const Curve& c, double length, const Roofline& roofline);
  const Slice* slice_of(std::span<const hal::DType> dtypes, std::int64_t heads) const;

  std::vector<Slice> slices_;  // in file order
};

}  // namespace nvl::fakegpu
