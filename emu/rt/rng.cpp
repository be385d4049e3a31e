#include "emu/rt/rng.h"

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

#include "emu/rt/hash.h"

namespace nvl::rt {

std::uint64_t Rng::derive_seed(std::uint64_t run_seed, std::string_view name) {
  return splitmix64(run_seed ^ splitmix64(fnv1a64(name)));
}

std::int64_t Rng::uniform_int(std::int64_t lo, std::int64_t hi) {
  if (lo > hi) throw std::invalid_argument("uniform_int: lo " + std::to_string(lo) + " > hi " + std::to_string(hi));
  const std::uint64_t span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
  if (span == UINT64_MAX) return static_cast<std::int64_t>(engine_());
  const std::uint64_t n = span + 1;
  // Rejection sampling keeps it unbiased.
  const std::uint64_t limit = UINT64_MAX - (UINT64_MAX % n);
  std::uint64_t x = engine_();
  while (x >= limit) x = engine_();
  return lo + static_cast<std::int64_t>(x % n);
}

double Rng::exponential(double mean) { return -mean * std::log1p(-uniform()); }

double Rng::normal(double mean, double stddev) {
  // Box-Muller; u1 in (0, 1] so the log is finite.
  const double u1 = 1.0 - uniform();
  const double u2 = uniform();
  return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double Rng::lognormal(double mu, double sigma) { return std::exp(normal(mu, sigma)); }

}  // namespace nvl::rt
