#pragma once
// A weighted mixture of lognormals, sampled by its inverse CDF (bisection on the mixture CDF), so a
// stratified uniform reproduces the fitted quantiles closely.
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "emu/workload/lognormal.h"

namespace nvl::emu {

class LognormalMixture {
 public:
  struct Component {
    double weight;
    Lognormal dist;
  };
  explicit LognormalMixture(std::vector<Component> components);
  // From [{"weight", "mu", "sigma"}, ...]; weights must sum to 1.
  static LognormalMixture from_json(const nlohmann::json& j, const std::string& file, const std::string& where);

  double quantile(double u) const;
  double cdf(double x) const;

 private:
  std::vector<Component> components_;
};

}  // namespace nvl::emu
