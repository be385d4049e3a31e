#include "fakegpu/measured_grid_table.h"

#include <algorithm>

#include "emu/rt/measured_csv_reader.h"
#include "fakegpu/measured_curve.h"
#include "fakegpu/measured_dtype.h"

namespace nvl::fakegpu {

MeasuredGridTable MeasuredGridTable::load(const std::filesystem::path& file, const std::string& what,
                                          const std::string& header, std::size_t dtype_columns) {
  using Reader = rt::MeasuredCsvReader;
  Reader in(file, what, header);
  MeasuredGridTable t;
  std::vector<std::string_view> f;
  std::vector<hal::DType> dtypes(dtype_columns);
  std::string length_name = header;  // the header's column before latency_us
  length_name.erase(length_name.rfind(','));
  length_name.erase(0, length_name.rfind(',') + 1);
  while (in.next(f)) {
    for (std::size_t i = 0; i < dtype_columns; ++i) dtypes[i] = measured_dtype(in, f[i]);
    std::int64_t heads = 0, batch = 0, length = 0;
    double us = 0;
    const std::size_t n = dtype_columns;
    if (!Reader::parse(f[n], heads) || !Reader::parse(f[n + 1], batch) || !Reader::parse(f[n + 2], length) ||
        !Reader::parse(f[n + 3], us) || heads < 1 || batch < 1 || length < 1 || !(us > 0)) {
      throw in.error("heads, batch, " + length_name + " must be positive integers and latency_us a positive number");
    }
    const auto out_of_order = [&] { return in.error("rows must be sorted by " + header.substr(0, header.rfind(','))); };
    if (t.slices_.empty() || t.slices_.back().dtypes != dtypes || t.slices_.back().heads != heads) {
      const bool seen = std::any_of(t.slices_.begin(), t.slices_.end(),
                                    [&](const Slice& s) { return s.dtypes == dtypes && s.heads == heads; });
      if (seen) throw out_of_order();
      t.slices_.push_back(Slice{dtypes, heads, {}});
    }
    auto& curves = t.slices_.back().curves;
    if (curves.empty() || curves.back().batch != batch) {
      if (!curves.empty() && curves.back().batch > batch) throw out_of_order();
      curves.push_back(Curve{batch, {}, {}});
    }
    Curve& c = curves.back();
    if (!c.length.empty() && c.length.back() >= static_cast<double>(length)) {
      throw in.error(length_name + " " + std::to_string(length) + " repeats or goes back within its batch");
    }
    c.length.push_back(static_cast<double>(length));
    c.ns.push_back(us * 1e3);
  }
  return t;
}

bool MeasuredGridTable::has(std::span<const hal::DType> dtypes) const {
  return std::any_of(slices_.begin(), slices_.end(), [&](const Slice& s) {
    return dtypes.size() <= s.dtypes.size() && std::equal(dtypes.begin(), dtypes.end(), s.dtypes.begin());
  });
}

double MeasuredGridTable::curve_ns(const Curve& c, double length, const Roofline& roofline) {
  const auto b = static_cast<double>(c.batch);
  return read_measured_curve(c.length, c.ns, length, [&](double l) { return roofline(b, l); });
}

const MeasuredGridTable::Slice* MeasuredGridTable::slice_of(std::span<const hal::DType> dtypes,
                                                            std::int64_t heads) const {
  const auto slice = std::find_if(slices_.begin(), slices_.end(), [&](const Slice& s) {
    return std::equal(dtypes.begin(), dtypes.end(), s.dtypes.begin(), s.dtypes.end()) && s.heads == heads;
  });
  return slice == slices_.end() ? nullptr : &*slice;
}

std::optional<double> MeasuredGridTable::longest_length(std::span<const hal::DType> dtypes, std::int64_t heads,
                                                        double batch) const {
  const Slice* slice = slice_of(dtypes, heads);
  if (slice == nullptr) return std::nullopt;
  const auto& curves = slice->curves;
  if (batch <= static_cast<double>(curves.front().batch)) return curves.front().length.back();
  if (batch >= static_cast<double>(curves.back().batch)) return curves.back().length.back();
  const auto hi = std::upper_bound(curves.begin(), curves.end(), batch,
                                   [](double b, const Curve& c) { return b < static_cast<double>(c.batch); });
  const Curve& lo = *std::prev(hi);
  if (batch == static_cast<double>(lo.batch)) return lo.length.back();  // read from its own curve alone
  return std::min(hi->length.back(), lo.length.back());
}

std::optional<double> MeasuredGridTable::time_ns(std::span<const hal::DType> dtypes, std::int64_t heads, double batch,
                                                 double length, const Roofline& roofline) const {
  const Slice* slice = slice_of(dtypes, heads);
  if (slice == nullptr || batch <= 0 || length <= 0) return std::nullopt;
  const auto& curves = slice->curves;
  if (batch <= static_cast<double>(curves.front().batch)) return curve_ns(curves.front(), length, roofline);
  if (batch >= static_cast<double>(curves.back().batch)) {
    const auto last = static_cast<double>(curves.back().batch);
    return curve_ns(curves.back(), length, roofline) * roofline(batch, length) / roofline(last, length);
  }
  const auto hi = std::upper_bound(curves.begin(), curves.end(), batch,
                                   [](double b, const Curve& c) { return b < static_cast<double>(c.batch); });
  const Curve& h = *hi;
  const Curve& l = *std::prev(hi);
  const double lo_ns = curve_ns(l, length, roofline);
  const double hi_ns = curve_ns(h, length, roofline);
  return lo_ns + (hi_ns - lo_ns) * (batch - static_cast<double>(l.batch)) / static_cast<double>(h.batch - l.batch);
}

}  // namespace nvl::fakegpu
