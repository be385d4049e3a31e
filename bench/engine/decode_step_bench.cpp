// Host time per lockstep decode step of the 64-rank normal group (GLM-5 on GB300, 64 running requests
// per rank), and simulated seconds per wall second for steady decode. Figures, not pass/fail.
#include <benchmark/benchmark.h>

#include "emu/cluster/emulated_cluster.h"
#include "emu/rt/virtual_runtime.h"
#include "engine/worker/normal_worker_group.h"

namespace nvl {
namespace {

void BM_NormalGroupDecodeStep(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const std::int64_t per_rank = state.range(1);
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", ranks);
  const engine::ModelProfile model = engine::load_model_profile(engine::model_profile_path("glm-5"));
  engine::NormalGroupConfig cfg;
  cfg.scheduler.max_running = per_rank;
  engine::NormalWorkerGroup group(rt, model, cluster.devices(0, ranks), cluster.collectives(), cfg,
                                  [](std::int32_t, const engine::StepOutcome&) {},
                                  [](std::int32_t, engine::RequestId, const std::string&) {});
  group.start();
  engine::RequestId id = 1;
  for (int r = 0; r < ranks; ++r) {
    for (std::int64_t b = 0; b < per_rank; ++b) {
      engine::RequestState q;
      q.id = id++;
      q.prompt_tokens = 4'000 + 97 * static_cast<std::int64_t>(b);
      q.max_output_tokens = 1'000'000;  // decode for the whole benchmark
      group.submit(r, std::move(q));
    }
  }
  // Past the prefill steps into steady decode.
  while (group.steps() < 8) rt.run(rt::RunOptions{.until = rt.now() + rt::ms(1)});
  const std::uint64_t steps_before = group.steps();
  const rt::Time sim_before = rt.now();
  for (auto _ : state) {
    const std::uint64_t s0 = group.steps();
    while (group.steps() == s0) rt.run(rt::RunOptions{.until = rt.now() + rt::ms(1)});
  }
  const double sim_s = (rt.now() - sim_before).seconds();
  state.counters["sim_ms_per_step"] = sim_s * 1e3 / static_cast<double>(group.steps() - steps_before);
  state.counters["sim_s_per_wall_s"] = benchmark::Counter(sim_s, benchmark::Counter::kIsRate);
  state.SetItemsProcessed(state.iterations());
  state.SetLabel("items = lockstep decode steps of the whole group");
}
BENCHMARK(BM_NormalGroupDecodeStep)->Args({64, 64})->Args({8, 64})->Unit(benchmark::kMicrosecond)->MinTime(2.0);

}  // namespace
}  // namespace nvl

BENCHMARK_MAIN();
