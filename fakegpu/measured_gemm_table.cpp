#include "fakegpu/measured_gemm_table.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>

#include "emu/rt/measured_csv_reader.h"
#include "fakegpu/measured_curve.h"
#include "fakegpu/measured_dtype.h"

namespace nvl::fakegpu {

namespace {

constexpr double kMaxOctaves = 2;

}  // namespace

MeasuredGemmTable MeasuredGemmTable::load(const std::filesystem::path& file) {
  using Reader = rt::MeasuredCsvReader;
  Reader in(file, "the measured GEMM table", "dtype,m,n,k,latency_us");
  MeasuredGemmTable t;
  t.sites_.resize(hal::kDTypeCount);
  std::vector<std::string_view> f;
  while (in.next(f)) {
    const hal::DType dtype = measured_dtype(in, f[0]);
    std::int64_t m = 0, n = 0, k = 0;
    double us = 0;
    if (!Reader::parse(f[1], m) || !Reader::parse(f[2], n) || !Reader::parse(f[3], k) || !Reader::parse(f[4], us) ||
        m < 1 || n < 1 || k < 1 || !(us > 0)) {
      throw in.error("m, n, k must be positive integers and latency_us a positive number");
    }
    auto& sites = t.sites_[static_cast<std::size_t>(dtype)];
    if (sites.empty() || sites.back().n != n || sites.back().k != k) {
      const bool ascending = sites.empty() || std::pair(sites.back().n, sites.back().k) < std::pair(n, k);
      if (!ascending) throw in.error("rows must be sorted by dtype, n, k, m (as the importer writes them)");
      sites.push_back(Site{n, k, {}, {}});
    }
    Site& s = sites.back();
    if (!s.m.empty() && s.m.back() >= m) throw in.error("m " + std::to_string(m) + " repeats or goes back within its (n, k)");
    s.m.push_back(m);
    s.ns.push_back(us * 1e3);
  }
  return t;
}

bool MeasuredGemmTable::has(hal::DType dtype) const { return !sites_[static_cast<std::size_t>(dtype)].empty(); }

std::size_t MeasuredGemmTable::points() const {
  std::size_t n = 0;
  for (const auto& sites : sites_) {
    for (const Site& s : sites) n += s.m.size();
  }
  return n;
}

double MeasuredGemmTable::curve_ns(const Site& s, std::int64_t m, const Roofline& roofline) const {
  return read_measured_curve(s.m, s.ns, m, [&](std::int64_t at) { return roofline(at, s.n, s.k); });
}

std::optional<double> MeasuredGemmTable::time_ns(hal::DType dtype, std::int64_t m, std::int64_t n, std::int64_t k,
                                                 const Roofline& roofline) const {
  const auto& sites = sites_[static_cast<std::size_t>(dtype)];
  const auto at = std::lower_bound(sites.begin(), sites.end(), std::pair(n, k),
                                   [](const Site& s, const std::pair<std::int64_t, std::int64_t>& key) {
                                     return std::pair(s.n, s.k) < key;
                                   });
  if (at != sites.end() && at->n == n && at->k == k) return curve_ns(*at, m, roofline);
  // Off the sites: the nearest sites' utilisation at this m.
  const Neighbours& near = neighbours(dtype, n, k);
  if (near.count == 0) return std::nullopt;
  double weights = 0, utilisation = 0;
  for (std::size_t i = 0; i < near.count; ++i) {
    const auto [d, site] = near.nearest[i];
    const Site& s = sites[site];
    const double w = 1.0 / (d * d);
    weights += w;
    utilisation += w * roofline(m, s.n, s.k) / curve_ns(s, m, roofline);
  }
  return roofline(m, n, k) / (utilisation / weights);
}

const MeasuredGemmTable::Neighbours& MeasuredGemmTable::neighbours(hal::DType dtype, std::int64_t n,
                                                                   std::int64_t k) const {
  const auto [at, fresh] = neighbours_.try_emplace({dtype, n, k});
  if (!fresh) return at->second;
  const auto& sites = sites_[static_cast<std::size_t>(dtype)];
  std::vector<std::pair<double, std::size_t>> near;
  for (std::size_t i = 0; i < sites.size(); ++i) {
    const double d = std::hypot(std::log2(static_cast<double>(n) / static_cast<double>(sites[i].n)),
                                std::log2(static_cast<double>(k) / static_cast<double>(sites[i].k)));
    if (d <= kMaxOctaves) near.emplace_back(d, i);
  }
  Neighbours& out = at->second;
  out.count = std::min(near.size(), out.nearest.size());
  std::partial_sort(near.begin(), near.begin() + static_cast<std::ptrdiff_t>(out.count), near.end(),
                    [](const auto& a, const auto& b) { return a.first < b.first; });
  std::copy_n(near.begin(), out.count, out.nearest.begin());
  return out;
}

}  // namespace nvl::fakegpu
