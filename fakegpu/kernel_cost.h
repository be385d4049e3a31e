#pragma once
// A kernel's price at full rate (the whole device, nominal clock), split so that a share of the
// SMs or a throttled clock can be applied later without pricing the kernel again.
#include <algorithm>
#include <optional>

#include "engine/hal/kernel.h"

namespace nvl::fakegpu {

struct KernelCost {
  double compute_ns = 0;   // compute-bound time, efficiency curve included
  double memory_ns = 0;    // HBM-bound time, efficiency curve included
  double overhead_ns = 0;  // launch (or graph-node) overhead, not scaled by shares
  bool measured = false;   // compute and memory time from a measured table (scaled together), not the roofline
  std::optional<hal::KernelKind> kind;  // empty: a graph launch's own overhead
};

// The rates a kernel runs at, as fractions of the whole device: compute (SM share times clock
// factor) and HBM bandwidth.
struct RunShares {
  double compute = 1.0;
  double memory = 1.0;
  bool operator==(const RunShares&) const = default;
};

inline double price_ns(const KernelCost& c, RunShares s) {
  return c.overhead_ns + std::max(c.compute_ns / s.compute, c.memory_ns / s.memory);
}

}  // namespace nvl::fakegpu
