#pragma once
// A seeded random stream. The generator (mt19937_64) and every transform below are fixed by this
// code, not by the standard library's distributions, so numbers are the same on any platform.
#include <cstdint>
#include <random>
#include <string_view>

namespace nvl::rt {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}

  // The seed of stream `name` under run seed `run_seed` (splitmix64 of the seed and a hash of the name).
  static std::uint64_t derive_seed(std::uint64_t run_seed, std::string_view name);

  std::uint64_t next_u64() { return engine_(); }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [lo, hi], both included; lo > hi is an error.
  std::int64_t uniform_int(std::int64_t lo, std::int64_t hi);
  bool bernoulli(double p) { return uniform() < p; }
  // Exponential with the given mean (inter-arrival times of a Poisson process).
  double exponential(double mean);
  double normal(double mean, double stddev);
  // exp(N(mu, sigma)).
  double lognormal(double mu, double sigma);

  // For standard-library algorithms that take a URBG (shuffle, sample).
  std::mt19937_64& engine() { return engine_; }

 private:
  std::mt19937_64 engine_;
};

}  // namespace nvl::rt
