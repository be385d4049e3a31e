#pragma once
// exp(N(mu, sigma)), optionally truncated to [min, max]; sampled by its inverse CDF so that a stratified
// uniform gives a stratified sample.
#include <limits>

#include <nlohmann/json_fwd.hpp>

namespace nvl::emu {

class Lognormal {
 public:
  Lognormal() = default;
  Lognormal(double mu, double sigma, double min = 0, double max = std::numeric_limits<double>::infinity());
  // From {"mu", "sigma"[, "min"][, "max"]}; `where` names the key path for errors.
  static Lognormal from_json(const nlohmann::json& j, const std::string& file, const std::string& where);

  double quantile(double u) const;
  double cdf(double x) const;
  // Untruncated mean exp(mu + sigma^2 / 2).
  double mean() const;
  // The distribution of factor * X: every quantile and both bounds times factor.
  Lognormal scaled(double factor) const;

 private:
  double mu_ = 0;
  double sigma_ = 1;
  double min_ = 0;
  double max_ = std::numeric_limits<double>::infinity();
  double cdf_min_ = 0;
  double cdf_max_ = 1;
};

}  // namespace nvl::emu
