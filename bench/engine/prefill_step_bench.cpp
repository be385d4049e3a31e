// The TP8 prefill worker on the coding-agent shape (GLM-5 FP8 on GB300): each step prefills
// `per_step` requests of `new_tokens` uncached tokens on top of a cached `prior_tokens` prefix (REFERENCE.md
// §4: uncached mean 3,991, context about 64K). Reports the simulated step time and the worker's prefill
// throughput in uncached tokens per simulated second, which sizes the session rate the deployment
// sustains; and the host time per step.
#include <benchmark/benchmark.h>

#include "emu/cluster/emulated_cluster.h"
#include "emu/rt/virtual_runtime.h"
#include "engine/worker/prefill_worker.h"

namespace nvl {
namespace {

void BM_PrefillWorkerStep(benchmark::State& state) {
  const std::int64_t prior = state.range(0);
  const std::int64_t fresh = state.range(1);
  constexpr int kGpus = 8;
  constexpr std::int64_t kBlock = 64;
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", kGpus);
  const engine::ModelProfile model = engine::load_model_profile(engine::model_profile_path("glm-5"));
  engine::PrefillWorkerConfig cfg;
  std::int64_t prefilled = 0;
  engine::PrefillWorker worker(
      rt, model, cluster.devices(0, kGpus), cluster.collectives(), cfg,
      [&](const engine::StepOutcome&) { prefilled += fresh; }, [](engine::RequestId, std::int64_t, std::int64_t, std::uint64_t) {},
      [](engine::RequestId, const std::string& why) { throw std::runtime_error(why); });
  worker.start();
  engine::RequestId id = 1;
  const std::int64_t per_step = cfg.scheduler.token_budget / fresh;
  rt::Duration sim;
  std::uint64_t steps = 0;
  for (auto _ : state) {
    // One step's worth of requests whose prefix is already in the worker's cache (as the P/D system
    // imports it from the decode rank before prefill).
    for (std::int64_t k = 0; k < per_step; ++k) {
      engine::RequestState q;
      q.id = id++;
      q.prompt_tokens = prior + fresh;
      for (std::int64_t b = 0; b < prior / kBlock; ++b) q.prompt_hashes.push_back(q.id << 20 | static_cast<std::uint64_t>(b));
      worker.kv().import(q.prompt_hashes);
      q.max_output_tokens = 1;
      worker.submit(0, std::move(q));
    }
    const rt::Time t0 = rt.now();
    const std::uint64_t s0 = worker.steps();
    rt.run();
    sim += rt.now() - t0;
    steps += worker.steps() - s0;
  }
  state.counters["sim_ms_per_step"] = sim.seconds() * 1e3 / static_cast<double>(steps);
  state.counters["uncached_tok_per_sim_s"] = static_cast<double>(prefilled) / sim.seconds();
  state.SetLabel("items = prefill steps of the TP8 worker");
}
// Prior context 60K (960 blocks) with 4K new (about the mean call), 16K new (a long call), and no prior
// context (a first call).
BENCHMARK(BM_PrefillWorkerStep)->Args({61'440, 4'096})->Args({61'440, 16'384})->Args({0, 8'192})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace nvl

BENCHMARK_MAIN();
