#pragma once
// A weighted mixture of lognormals, sampled by its inverse CDF (bisection on the mixture CDF), so a
// stratified uniform reproduces the fitted quantiles closely. A generated workload draws tens of
// thousands of quantiles, so the parts of the bisection that do not depend on u are computed once.
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
  // The first levels of the bisection tree are the same for every u: their midpoints' CDF values are
  // tabulated, in heap order (node n's children: 2n+1 when u lies above its midpoint's CDF, else 2n+2).
  static constexpr int kTabulatedLevels = 12;
  void tabulate(double lo, double hi, std::size_t node, int level);

  std::vector<Component> components_;
  double log_lo_ = 0;  // the bisection's range in log space: the components' extreme quantiles
  double log_hi_ = 0;
  std::vector<double> node_cdf_;
};

}  // namespace nvl::emu
