#include "fakegpu/measured_moe_table.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "emu/rt/measured_csv_reader.h"
#include "fakegpu/measured_curve.h"
#include "fakegpu/measured_dtype.h"

namespace nvl::fakegpu {

MeasuredMoeTable MeasuredMoeTable::load(const std::filesystem::path& file) {
  using Reader = rt::MeasuredCsvReader;
  static const std::string kHeader = "dtype,hidden,inter,topk,experts,moe_tp,moe_ep,tokens,latency_us";
  Reader in(file, "the measured MoE table", kHeader);
  MeasuredMoeTable t;
  std::vector<std::string_view> f;
  while (in.next(f)) {
    const hal::DType dtype = measured_dtype(in, f[0]);
    std::array<std::int64_t, 7> v{};  // hidden .. tokens
    double us = 0;
    bool ok = Reader::parse(f[8], us) && us > 0;
    for (std::size_t i = 0; i < v.size(); ++i) ok = ok && Reader::parse(f[i + 1], v[i]) && v[i] > 0;
    if (!ok) {
      throw in.error("hidden, inter, topk, experts, moe_tp, moe_ep, tokens must be positive integers and "
                     "latency_us a positive number");
    }
    Curve key{dtype, v[0], v[1], v[2], v[3], v[4], v[5], {}, {}};
    const std::int64_t tokens = v[6];
    const auto same = [&](const Curve& c) {
      return c.dtype == key.dtype && c.hidden == key.hidden && c.inter == key.inter && c.topk == key.topk &&
             c.experts == key.experts && c.tp == key.tp && c.ep == key.ep;
    };
    if (t.curves_.empty() || !same(t.curves_.back())) {
      if (std::any_of(t.curves_.begin(), t.curves_.end(), same)) {
        throw in.error("rows must be sorted by dtype,hidden,inter,topk,experts,moe_tp,moe_ep,tokens");
      }
      t.curves_.push_back(std::move(key));
    }
    Curve& c = t.curves_.back();
    if (!c.tokens.empty() && c.tokens.back() >= static_cast<double>(tokens)) {
      throw in.error("tokens " + std::to_string(tokens) + " repeats or goes back within its MoE shape");
    }
    c.tokens.push_back(static_cast<double>(tokens));
    c.ns.push_back(us * 1e3);
  }
  return t;
}

std::optional<double> MeasuredMoeTable::time_ns(hal::DType dtype, std::int64_t hidden, const hal::FusedMoeShape& op,
                                                const Roofline& roofline) const {
  if (op.tokens <= 0) return std::nullopt;
  const auto tokens = static_cast<double>(op.tokens);
  const auto read = [&](const Curve& c) {
    return read_measured_curve(c.tokens, c.ns, tokens, [&](double t) { return roofline(t, c.ep); });
  };
  const Curve* below = nullptr;
  const Curve* above = nullptr;
  for (const Curve& c : curves_) {
    if (c.dtype != dtype || c.hidden != hidden || c.inter != op.expert_inter || c.topk != op.topk ||
        c.experts != op.experts || c.tp != op.tp) {
      continue;
    }
    if (c.ep == op.ep) return read(c);
    if (c.ep < op.ep && (below == nullptr || c.ep > below->ep)) below = &c;
    if (c.ep > op.ep && (above == nullptr || c.ep < above->ep)) above = &c;
  }
  if (below == nullptr || above == nullptr) return std::nullopt;
  const double w = std::log(static_cast<double>(op.ep) / static_cast<double>(below->ep)) /
                   std::log(static_cast<double>(above->ep) / static_cast<double>(below->ep));
  return std::exp((1 - w) * std::log(read(*below)) + w * std::log(read(*above)));
}

bool MeasuredMoeTable::has(hal::DType dtype) const {
  return std::any_of(curves_.begin(), curves_.end(), [&](const Curve& c) { return c.dtype == dtype; });
}

}  // namespace nvl::fakegpu
