#include "emu/workload/lognormal.h"

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "emu/rt/errors.h"
#include "emu/workload/normal.h"

namespace nvl::emu {
namespace {

double untruncated_cdf(double mu, double sigma, double x) {
  if (x <= 0) return 0;
  if (std::isinf(x)) return 1;
  return normal_cdf((std::log(x) - mu) / sigma);
}

}  // namespace

Lognormal::Lognormal(double mu, double sigma, double min, double max)
    : mu_(mu), sigma_(sigma), min_(min), max_(max),
      cdf_min_(untruncated_cdf(mu, sigma, min)), cdf_max_(untruncated_cdf(mu, sigma, max)) {}

Lognormal Lognormal::from_json(const nlohmann::json& j, const std::string& file, const std::string& where) {
  auto number = [&](const char* key, bool required, double fallback) {
    const auto it = j.find(key);
    if (it == j.end()) {
      if (required) throw rt::InputError(file, where + "." + key, "missing field");
      return fallback;
    }
    if (!it->is_number()) throw rt::InputError(file, where + "." + key, "expected a number");
    return it->get<double>();
  };
  if (!j.is_object()) throw rt::InputError(file, where, "expected an object {mu, sigma[, min][, max]}");
  const double sigma = number("sigma", true, 0);
  if (!(sigma > 0)) throw rt::InputError(file, where + ".sigma", "expected a positive number");
  const double min = number("min", false, 0);
  const double max = number("max", false, std::numeric_limits<double>::infinity());
  if (!(min >= 0 && max > min)) throw rt::InputError(file, where, "expected 0 <= min < max");
  return Lognormal(number("mu", true, 0), sigma, min, max);
}

double Lognormal::quantile(double u) const {
  return std::exp(mu_ + sigma_ * normal_quantile(cdf_min_ + u * (cdf_max_ - cdf_min_)));
}

double Lognormal::cdf(double x) const {
  if (x <= min_) return 0;
  if (x >= max_) return 1;
  return (untruncated_cdf(mu_, sigma_, x) - cdf_min_) / (cdf_max_ - cdf_min_);
}

double Lognormal::mean() const { return std::exp(mu_ + sigma_ * sigma_ / 2); }

Lognormal Lognormal::scaled(double factor) const {
  return Lognormal(mu_ + std::log(factor), sigma_, min_ * factor, max_ * factor);
}

}  // namespace nvl::emu
