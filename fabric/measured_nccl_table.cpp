#include "fabric/measured_nccl_table.h"

#include <algorithm>
#include <string>

#include "emu/rt/measured_csv_reader.h"

namespace nvl::fabric {

namespace {

constexpr std::array<const char*, 3> kOpNames{"all_gather", "all_reduce", "reduce_scatter"};

}  // namespace

double nccl_bus_factor(hal::CollectiveKind kind, int gpus) {
  const double n = gpus;
  switch (kind) {
    case hal::CollectiveKind::all_reduce:
      return 2 * (n - 1) / n;
    case hal::CollectiveKind::all_gather:
    case hal::CollectiveKind::reduce_scatter:
    case hal::CollectiveKind::all_to_all:
      return (n - 1) / n;
    case hal::CollectiveKind::broadcast:
    case hal::CollectiveKind::send_recv:
      return 1;
  }
  return 1;
}

MeasuredNcclTable MeasuredNcclTable::load(const std::filesystem::path& file) {
  using Reader = rt::MeasuredCsvReader;
  Reader in(file, "the measured NCCL table", "op,gpus,bytes,latency_us,measured_on");
  MeasuredNcclTable t;
  std::vector<std::string_view> f;
  std::size_t last_op = 0;
  while (in.next(f)) {
    const auto named = std::find(kOpNames.begin(), kOpNames.end(), f[0]);
    if (named == kOpNames.end()) {
      throw in.error("'" + std::string(f[0]) + "' is not an op (all_gather, all_reduce, reduce_scatter)");
    }
    const auto op = static_cast<std::size_t>(named - kOpNames.begin());
    std::int64_t gpus = 0, bytes = 0;
    double us = 0;
    if (!Reader::parse(f[1], gpus) || !Reader::parse(f[2], bytes) || !Reader::parse(f[3], us) || gpus < 2 ||
        gpus > 100'000 || bytes < 1 || !(us > 0) || f[4].empty()) {
      throw in.error("gpus must be an integer of at least 2, bytes a positive integer, latency_us a positive "
                     "number and measured_on a system");
    }
    auto& curves = t.curves_[op];
    if (op < last_op) throw in.error("rows must be sorted by op, gpus, bytes (as the importer writes them)");
    last_op = op;
    if (curves.empty() || curves.back().gpus != gpus) {
      if (!curves.empty() && curves.back().gpus > gpus) {
        throw in.error("rows must be sorted by op, gpus, bytes (as the importer writes them)");
      }
      curves.push_back(Curve{static_cast<int>(gpus), {}, {}});
    }
    Curve& c = curves.back();
    if (!c.bytes.empty() && c.bytes.back() >= static_cast<double>(bytes)) {
      throw in.error("bytes " + std::to_string(bytes) + " repeats or goes back within its op and GPU count");
    }
    c.bytes.push_back(static_cast<double>(bytes));
    c.ns.push_back(us * 1e3);
  }
  return t;
}

std::optional<MeasuredCollectiveTime> MeasuredNcclTable::time(hal::CollectiveKind kind, int gpus,
                                                              std::uint64_t bytes) const {
  const auto op = std::find(kOps.begin(), kOps.end(), kind);
  if (op == kOps.end() || gpus < 2) return std::nullopt;
  const auto& curves = curves_[static_cast<std::size_t>(op - kOps.begin())];
  if (curves.empty()) return std::nullopt;
  // The largest measured count at or below gpus, else the smallest.
  auto above = std::upper_bound(curves.begin(), curves.end(), gpus, [](int g, const Curve& c) { return g < c.gpus; });
  const Curve& c = above == curves.begin() ? curves.front() : *std::prev(above);
  const double scale = nccl_bus_factor(kind, gpus) / nccl_bus_factor(kind, c.gpus);
  const double x = static_cast<double>(bytes);
  double ns = 0;
  if (x <= c.bytes.front()) {
    ns = c.ns.front();
  } else if (x >= c.bytes.back()) {
    ns = c.ns.back() * x / c.bytes.back();
  } else {
    const auto hi = static_cast<std::size_t>(std::upper_bound(c.bytes.begin(), c.bytes.end(), x) - c.bytes.begin());
    const std::size_t lo = hi - 1;
    ns = c.ns[lo] + (c.ns[hi] - c.ns[lo]) * (x - c.bytes[lo]) / (c.bytes[hi] - c.bytes[lo]);
  }
  return MeasuredCollectiveTime{ns * scale, c.ns.front() * scale};
}

}  // namespace nvl::fabric
