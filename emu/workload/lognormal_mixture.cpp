#include "emu/workload/lognormal_mixture.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "emu/rt/errors.h"

namespace nvl::emu {

LognormalMixture::LognormalMixture(std::vector<Component> components) : components_(std::move(components)) {}

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
  double lo = std::log(components_[0].dist.quantile(1e-12));
  double hi = std::log(components_[0].dist.quantile(1 - 1e-12));
  for (const auto& c : components_) {
    lo = std::min(lo, std::log(c.dist.quantile(1e-12)));
    hi = std::max(hi, std::log(c.dist.quantile(1 - 1e-12)));
  }
  constexpr int kBisectionSteps = 60;  // below 1e-15 relative width on the log scale
  for (int i = 0; i < kBisectionSteps; ++i) {
    const double mid = 0.5 * (lo + hi);
    (cdf(std::exp(mid)) < u ? lo : hi) = mid;
  }
  return std::exp(0.5 * (lo + hi));
}

}  // namespace nvl::emu
