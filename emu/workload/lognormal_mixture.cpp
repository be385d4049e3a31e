#include "emu/workload/lognormal_mixture.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "emu/rt/errors.h"

namespace nvl::emu {

LognormalMixture::LognormalMixture(std::vector<Component> components) : components_(std::move(components)) {
  if (components_.size() < 2) return;  // one component is sampled directly
  log_lo_ = std::log(components_[0].dist.quantile(1e-12));
  log_hi_ = std::log(components_[0].dist.quantile(1 - 1e-12));
  for (const auto& c : components_) {
    log_lo_ = std::min(log_lo_, std::log(c.dist.quantile(1e-12)));
    log_hi_ = std::max(log_hi_, std::log(c.dist.quantile(1 - 1e-12)));
  }
  node_cdf_.resize((std::size_t{1} << kTabulatedLevels) - 1);
  tabulate(log_lo_, log_hi_, 0, 0);
}

void LognormalMixture::tabulate(double lo, double hi, std::size_t node, int level) {
  if (level == kTabulatedLevels) return;
  const double mid = 0.5 * (lo + hi);
  node_cdf_[node] = cdf(std::exp(mid));
  tabulate(mid, hi, 2 * node + 1, level + 1);
  tabulate(lo, mid, 2 * node + 2, level + 1);
}

LognormalMixture LognormalMixture::from_json(const nlohmann::json& j, const std::string& file,
                                             const std::string& where) {
  if (!j.is_array() || j.empty()) throw rt::InputError(file, where, "expected a non-empty array of components");
  std::vector<Component> comps;
  double total = 0;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    const auto w = j[i].find("weight");
    if (w == j[i].end() || !w->is_number() || !(w->get<double>() > 0)) {
      throw rt::InputError(file, at + ".weight", "expected a positive number");
    }
    comps.push_back({w->get<double>(), Lognormal::from_json(j[i], file, at)});
    total += comps.back().weight;
  }
  // The weights are printed with a few digits in the profile.
  constexpr double kWeightSumTolerance = 1e-3;
  if (std::fabs(total - 1) > kWeightSumTolerance) throw rt::InputError(file, where, "weights must sum to 1");
  for (auto& c : comps) c.weight /= total;
  return LognormalMixture(std::move(comps));
}

double LognormalMixture::cdf(double x) const {
  double p = 0;
  for (const auto& c : components_) p += c.weight * c.dist.cdf(x);
  return p;
}

double LognormalMixture::quantile(double u) const {
  if (components_.size() == 1) return components_[0].dist.quantile(u);
  // Bisection in log space between the components' extreme quantiles.
  double lo = log_lo_;
  double hi = log_hi_;
  bool lo_below = false;  // cdf(exp(lo)) < u is known: lo was a midpoint found below u
  bool hi_above = false;  // likewise cdf(exp(hi)) >= u
  std::size_t node = 0;
  constexpr int kBisectionSteps = 60;  // below 1e-15 relative width on the log scale
  for (int i = 0; i < kBisectionSteps; ++i) {
    const double mid = 0.5 * (lo + hi);
    // Once lo and hi are adjacent doubles the midpoint rounds to one of them, whose side is known:
    // every step left would change nothing.
    if ((mid == lo && lo_below) || (mid == hi && hi_above)) break;
    const bool below = i < kTabulatedLevels ? node_cdf_[node] < u : cdf(std::exp(mid)) < u;
    if (below) {
      lo = mid;
      lo_below = true;
    } else {
      hi = mid;
      hi_above = true;
    }
    node = 2 * node + (below ? 1 : 2);
  }
  return std::exp(0.5 * (lo + hi));
}

}  // namespace nvl::emu
