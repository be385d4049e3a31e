#include "emu/workload/stratified_uniforms.h"

#include <numeric>
#include <utility>

namespace nvl::emu {

std::vector<double> stratified_uniforms(std::size_t n, rt::Rng& rng) {
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  // Fisher-Yates with the runtime's own integers: std::shuffle differs between standard libraries.
  for (std::size_t i = n; i > 1; --i) {
    const auto j = static_cast<std::size_t>(rng.uniform_int(0, static_cast<std::int64_t>(i - 1)));
    std::swap(order[i - 1], order[j]);
  }
  std::vector<double> u(n);
  for (std::size_t k = 0; k < n; ++k) u[k] = (static_cast<double>(order[k]) + rng.uniform()) / static_cast<double>(n);
  return u;
}

}  // namespace nvl::emu
