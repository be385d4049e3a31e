// Host time of the KV-cache and router lookups a request makes along its prompt's chain of block
// hashes (PrefixIndex::best_match and match, KvBlockPool::acquire_prefix), against indexes of the
// sizes a long run builds. Figures, not pass/fail.
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include <benchmark/benchmark.h>

#include "engine/kv/kv_block_pool.h"
#include "engine/router/prefix_index.h"

namespace nvl::engine {
namespace {

constexpr std::size_t kChainBlocks = 2'000;  // a 128k-token prompt at 64 tokens a block

// `blocks` random hashes: consecutive runs of kChainBlocks are the prompts' chains.
std::vector<BlockHash> random_hashes(std::size_t blocks) {
  std::mt19937_64 rng(1);
  std::vector<BlockHash> h(blocks);
  for (BlockHash& x : h) x = rng();
  return h;
}

// Each iteration walks the next chain: as in a run, the lookups find the index cold in the caches.
std::span<const BlockHash> chain(const std::vector<BlockHash>& hashes, std::size_t iteration) {
  const std::size_t chains = hashes.size() / kChainBlocks;
  return std::span<const BlockHash>(hashes).subspan((iteration % chains) * kChainBlocks, kChainBlocks);
}

// Arguments: blocks indexed; the router's ranks (64: one rack of DP64; 512: eight).
void BM_PrefixIndexLookups(benchmark::State& state) {
  const auto blocks = static_cast<std::size_t>(state.range(0));
  const auto ranks = static_cast<std::int32_t>(state.range(1));
  const std::vector<BlockHash> hashes = random_hashes(blocks);
  PrefixIndex idx(ranks);
  // Rank 0 holds every chain in full, so both walks go their whole length; other ranks hold parts.
  for (std::size_t i = 0; i < blocks; ++i) {
    idx.apply(KvEvent{KvEvent::Kind::stored, KvTier::gpu, 0, hashes[i]});
    idx.apply(KvEvent{KvEvent::Kind::stored, KvTier::gpu, static_cast<std::int32_t>(i % ranks), hashes[i]});
  }
  std::size_t iteration = 0;
  for (auto _ : state) {
    const auto c = chain(hashes, iteration++);
    benchmark::DoNotOptimize(idx.best_match(c));
    benchmark::DoNotOptimize(idx.match(c));
  }
  state.SetItemsProcessed(state.iterations() * 2 * static_cast<std::int64_t>(kChainBlocks));
  state.SetLabel("items = block lookups");
}
BENCHMARK(BM_PrefixIndexLookups)->ArgsProduct({{100'000, 2'000'000}, {64, 512}})->Unit(benchmark::kMicrosecond);

void BM_KvPoolAcquirePrefix(benchmark::State& state) {
  const auto blocks = static_cast<std::int64_t>(state.range(0));
  const std::vector<BlockHash> hashes = random_hashes(static_cast<std::size_t>(blocks));
  KvBlockPool pool("bench", blocks, 64);
  const auto ids = *pool.allocate(blocks);
  for (std::int64_t i = 0; i < blocks; ++i) {
    pool.publish(ids[static_cast<std::size_t>(i)], hashes[static_cast<std::size_t>(i)]);
  }
  pool.release(ids);  // all cached: acquiring takes them out of the LRU, releasing puts them back
  std::size_t iteration = 0;
  for (auto _ : state) {
    const std::vector<BlockId> got = pool.acquire_prefix(chain(hashes, iteration++));
    pool.release(got);
    benchmark::DoNotOptimize(got.size());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kChainBlocks));
  state.SetLabel("items = blocks acquired and released");
}
BENCHMARK(BM_KvPoolAcquirePrefix)->Arg(100'000)->Arg(2'000'000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace nvl::engine

BENCHMARK_MAIN();
