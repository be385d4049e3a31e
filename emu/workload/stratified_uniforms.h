#pragma once
// n uniforms in [0, 1), one in each interval [k/n, (k+1)/n), in a seeded random order. Sampling a fitted
// distribution through them gives a sample whose quantiles match the fit far more closely than n
// independent draws (for 610 trials, a p99 from independent draws is off by about 7% on average).
#include <cstddef>
#include <vector>

#include "emu/rt/rng.h"

namespace nvl::emu {

std::vector<double> stratified_uniforms(std::size_t n, rt::Rng& rng);

}  // namespace nvl::emu
