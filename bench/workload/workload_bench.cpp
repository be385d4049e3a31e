// Loading the real traces, generating the coding-agent workload and replaying it through the unbounded
// cache. The Mooncake file (3 MB, 12k requests) should load in well under a second.
#include <benchmark/benchmark.h>

#include "emu/workload/azure_trace.h"
#include "emu/workload/claude_code_trace.h"
#include "emu/workload/coding_agent_generator.h"
#include "emu/workload/mooncake_trace.h"
#include "emu/workload/trace_stats.h"

namespace {

using namespace nvl::emu;
const std::string kTraces = NVL_TRACES_DIR;

void BM_LoadMooncake(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(load_mooncake_trace(kTraces + "/mooncake/conversation_trace.jsonl"));
}
BENCHMARK(BM_LoadMooncake)->Unit(benchmark::kMillisecond);

void BM_LoadAzure(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(load_azure_trace(kTraces + "/azure/AzureLLMInferenceTrace_code.csv"));
}
BENCHMARK(BM_LoadAzure)->Unit(benchmark::kMillisecond);

void BM_LoadClaudeCode(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(load_claude_code_trace(kTraces + "/claude-code/traces"));
}
BENCHMARK(BM_LoadClaudeCode)->Unit(benchmark::kMillisecond);

void BM_GenerateCodex610(benchmark::State& state) {
  const CodingAgentGenerator gen(CodingAgentProfile::builtin_codex());
  std::uint64_t seed = 1;
  for (auto _ : state) benchmark::DoNotOptimize(gen.generate(610, seed++));
}
BENCHMARK(BM_GenerateCodex610)->Unit(benchmark::kMillisecond);

void BM_StatsCodex610(benchmark::State& state) {
  const Workload w = CodingAgentGenerator(CodingAgentProfile::builtin_codex()).generate(610, 1);
  for (auto _ : state) benchmark::DoNotOptimize(TraceStats::compute(w));
}
BENCHMARK(BM_StatsCodex610)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
