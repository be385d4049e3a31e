#include "emu/workload/bench_generator.h"

#include <string>

#include "emu/rt/rng.h"
#include "emu/workload/block_namespace.h"
#include "emu/workload/hash_chain_builder.h"

namespace nvl::emu {

Workload BenchGenerator::generate(std::size_t requests) const {
  Workload w;
  w.source = "bench";
  rt::Rng rng(rt::Rng::derive_seed(spec_.seed, "bench.input_lengths"));
  const BlockNamespace shared("bench/prefix");
  const std::int64_t shared_blocks = spec_.prefix / kBenchBlockTokens;
  for (std::size_t i = 0; i < requests; ++i) {
    const std::int64_t own =
        spec_.isl_low() == spec_.isl_high() ? spec_.isl : rng.uniform_int(spec_.isl_low(), spec_.isl_high());
    Request r;
    r.prompt_tokens = spec_.prefix + own;
    r.output_tokens = spec_.osl;
    const BlockNamespace mine("bench/request " + std::to_string(i));
    HashChainBuilder chain;
    const std::int64_t blocks = (r.prompt_tokens + kBenchBlockTokens - 1) / kBenchBlockTokens;
    for (std::int64_t b = 0; b < blocks; ++b) {
      chain.push(b < shared_blocks ? shared.hash(static_cast<std::uint64_t>(b)) : mine.hash(static_cast<std::uint64_t>(b)));
    }
    r.block_hashes = chain.snapshot();
    Session s;
    s.labels = {"bench", "request " + std::to_string(i), ""};
    s.block_size_tokens = kBenchBlockTokens;
    s.requests.push_back(std::move(r));
    w.sessions.push_back(std::move(s));
  }
  return w;
}

}  // namespace nvl::emu
