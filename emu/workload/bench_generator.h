#pragma once
// The benchmark workload: `requests` one-request sessions of random prompts, as the bench tools' random
// dataset sends them. Each prompt is `prefix` tokens every request shares, then its own tokens (the input
// length, drawn uniform in [isl_low, isl_high]); no two requests share anything past the prefix. Ids are
// per 64-token block, so the shared part a cache can hit is the prefix's whole blocks (the block holding
// the prefix's end is the request's own). Every request asks for exactly `osl` output tokens.
#include <cstddef>
#include <cstdint>

#include "emu/workload/bench_spec.h"
#include "emu/workload/workload.h"

namespace nvl::emu {

inline constexpr std::int32_t kBenchBlockTokens = 64;

class BenchGenerator {
 public:
  explicit BenchGenerator(BenchSpec spec) : spec_(spec) {}

  Workload generate(std::size_t requests) const;

 private:
  BenchSpec spec_;
};

}  // namespace nvl::emu
