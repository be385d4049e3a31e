#pragma once
// The benchmark workload's spec, `bench:isl=N,osl=M[,prefix=P][,isl_spread=F][,seed=S]`: the random
// dataset of `vllm bench serve` / `sglang.bench_serving --dataset-name random` / AIPerf, in tokens.
#include <cstdint>
#include <string>
#include <string_view>

namespace nvl::emu {

inline constexpr std::string_view kBenchPrefix = "bench:";

struct BenchSpec {
  std::int64_t isl = 0;     // input tokens after the prefix (the centre of the range when isl_spread > 0)
  std::int64_t osl = 0;     // output tokens of every request (EOS ignored)
  std::int64_t prefix = 0;  // tokens every prompt starts with, the same for all requests
  double isl_spread = 0;    // vLLM's --random-range-ratio: input uniform in [floor(N(1-F)), ceil(N(1+F))]
  std::uint64_t seed = 1;   // draws of the input lengths

  // The inclusive range the input length (after the prefix) is drawn from; lo is at least 1.
  std::int64_t isl_low() const;
  std::int64_t isl_high() const;
};

// Throws rt::InputError naming the spec and the key for an unknown key, a value that is not a number, a
// missing isl or osl, isl or osl below 1, a negative prefix, or isl_spread outside [0, 1).
BenchSpec parse_bench_spec(const std::string& spec);

}  // namespace nvl::emu
