#include "fakegpu/measured_mla_decode_table.h"

#include <algorithm>
#include <string>

#include "emu/rt/measured_csv_reader.h"
#include "fakegpu/measured_dtype.h"

namespace nvl::fakegpu {

MeasuredMlaDecodeTable MeasuredMlaDecodeTable::load(const std::filesystem::path& file) {
  using Reader = rt::MeasuredCsvReader;
  Reader in(file, "the measured MLA decode table", "kv_dtype,heads,batch,kv_len,latency_us");
  MeasuredMlaDecodeTable t;
  std::vector<std::string_view> f;
  while (in.next(f)) {
    const hal::DType dtype = measured_dtype(in, f[0]);
    std::int64_t heads = 0, batch = 0, kv_len = 0;
    double us = 0;
    if (!Reader::parse(f[1], heads) || !Reader::parse(f[2], batch) || !Reader::parse(f[3], kv_len) ||
        !Reader::parse(f[4], us) || heads < 1 || batch < 1 || kv_len < 1 || !(us > 0)) {
      throw in.error("heads, batch, kv_len must be positive integers and latency_us a positive number");
    }
    const auto out_of_order = [&] {
      return in.error("rows must be sorted by kv_dtype, heads, batch, kv_len (as the importer writes them)");
    };
    if (t.slices_.empty() || t.slices_.back().kv_dtype != dtype || t.slices_.back().heads != heads) {
      const bool seen = std::any_of(t.slices_.begin(), t.slices_.end(),
                                    [&](const Slice& s) { return s.kv_dtype == dtype && s.heads == heads; });
      if (seen) throw out_of_order();
      t.slices_.push_back(Slice{dtype, heads, {}});
    }
    auto& curves = t.slices_.back().curves;
    if (curves.empty() || curves.back().batch != batch) {
      if (!curves.empty() && curves.back().batch > batch) throw out_of_order();
      curves.push_back(Curve{batch, {}, {}});
    }
    Curve& c = curves.back();
    if (!c.kv_len.empty() && c.kv_len.back() >= static_cast<double>(kv_len)) {
      throw in.error("kv_len " + std::to_string(kv_len) + " repeats or goes back within its batch");
    }
    c.kv_len.push_back(static_cast<double>(kv_len));
    c.ns.push_back(us * 1e3);
  }
  return t;
}

bool MeasuredMlaDecodeTable::has(hal::DType kv_dtype) const {
  return std::any_of(slices_.begin(), slices_.end(), [&](const Slice& s) { return s.kv_dtype == kv_dtype; });
}

double MeasuredMlaDecodeTable::curve_ns(const Curve& c, double kv_len, const Roofline& roofline) {
  const auto b = static_cast<double>(c.batch);
  if (kv_len <= c.kv_len.front()) return c.ns.front();
  if (kv_len >= c.kv_len.back()) return c.ns.back() * roofline(b, kv_len) / roofline(b, c.kv_len.back());
  const auto hi = static_cast<std::size_t>(std::upper_bound(c.kv_len.begin(), c.kv_len.end(), kv_len) - c.kv_len.begin());
  const std::size_t lo = hi - 1;
  return c.ns[lo] + (c.ns[hi] - c.ns[lo]) * (kv_len - c.kv_len[lo]) / (c.kv_len[hi] - c.kv_len[lo]);
}

std::optional<double> MeasuredMlaDecodeTable::time_ns(hal::DType kv_dtype, std::int64_t heads, double batch,
                                                      double kv_len, const Roofline& roofline) const {
  const auto slice = std::find_if(slices_.begin(), slices_.end(),
                                  [&](const Slice& s) { return s.kv_dtype == kv_dtype && s.heads == heads; });
  if (slice == slices_.end() || batch <= 0 || kv_len <= 0) return std::nullopt;
  const auto& curves = slice->curves;
  if (batch <= static_cast<double>(curves.front().batch)) return curve_ns(curves.front(), kv_len, roofline);
  if (batch >= static_cast<double>(curves.back().batch)) {
    const auto last = static_cast<double>(curves.back().batch);
    return curve_ns(curves.back(), kv_len, roofline) * roofline(batch, kv_len) / roofline(last, kv_len);
  }
  const auto hi = std::upper_bound(curves.begin(), curves.end(), batch,
                                   [](double b, const Curve& c) { return b < static_cast<double>(c.batch); });
  const Curve& h = *hi;
  const Curve& l = *std::prev(hi);
  const double lo_ns = curve_ns(l, kv_len, roofline);
  const double hi_ns = curve_ns(h, kv_len, roofline);
  return lo_ns + (hi_ns - lo_ns) * (batch - static_cast<double>(l.batch)) / static_cast<double>(h.batch - l.batch);
}

}  // namespace nvl::fakegpu
