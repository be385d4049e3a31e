#pragma once
// One measured latency curve over a size, read as every measured table reads its curves: piecewise-linear
// between the measured sizes; below the smallest, its time (launch-bound); beyond the largest, its
// utilisation (roofline time / measured time) held, so the time grows as the roofline does.
#include <algorithm>
#include <cstddef>
#include <vector>

namespace nvl::fakegpu {

// `at` the measured sizes, ascending (integers or doubles), `ns` the times there; `roofline(size)` the
// roofline time at a size.
template <typename Sizes, typename Roofline>
double read_measured_curve(const Sizes& at, const std::vector<double>& ns, typename Sizes::value_type size,
                           const Roofline& roofline) {
  if (size <= at.front()) return ns.front();
  if (size >= at.back()) return ns.back() * roofline(size) / roofline(at.back());
  const auto hi = static_cast<std::size_t>(std::upper_bound(at.begin(), at.end(), size) - at.begin());
  const std::size_t lo = hi - 1;
  const double x = static_cast<double>(size - at[lo]) / static_cast<double>(at[hi] - at[lo]);
  return ns[lo] + x * (ns[hi] - ns[lo]);
}

}  // namespace nvl::fakegpu
