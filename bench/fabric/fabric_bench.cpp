// Fabric speed: flow recomputes per second with N concurrent flows on the NVL72 topology, and the host
// time to price one EP64 dispatch of 128 tokens per rank (first time, and from the signature cache).
#include <benchmark/benchmark.h>

#include <initializer_list>

#include "emu/rt/virtual_runtime.h"
#include "fabric/fabric_collectives.h"
#include "fabric/probe.h"
#include "fabric/profile_loader.h"
#include "fabric/sampled_routing.h"

using namespace nvl;

namespace {

const fabric::ClusterSpec& rack() {
  static const fabric::ClusterSpec spec = fabric::make_cluster("gb300-nvl72", 1);
  return spec;
}

// N long flows between pseudo-random GPU pairs (fixed LCG: deterministic), half over NVLink and half over
// the NICs; each iteration adds one flow and recomputes its component, then removes it and recomputes again.
void BM_FlowRecompute(benchmark::State& state) {
  rt::VirtualRuntime rt;
  fabric::Fabric fab(rt, rack(), fabric::FabricOptions{rt::Duration()});
  std::uint64_t x = 12345;
  auto next = [&] {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((x >> 33) % 72);
  };
  const auto n = state.range(0);
  for (std::int64_t i = 0; i < n; ++i) {
    const int a = next();
    int b = next();
    if (b == a) b = (a + 1) % 72;
    const auto path = (i % 2 == 0) ? hal::RdmaPath::nvlink : hal::RdmaPath::scale_out;
    const auto r = fab.route(fabric::Endpoint::gpu(a), fabric::Endpoint::gpu(b), path);
    fab.flows().start(r.channels, 1e15, r.latency, [](int) {});
  }
  fab.flows().recompute_now();
  const auto probe = fab.route(fabric::Endpoint::gpu(0), fabric::Endpoint::gpu(1), hal::RdmaPath::nvlink);
  const std::uint64_t before = fab.flows().recomputes();
  for (auto _ : state) {
    fab.flows().set_capacity(probe.channels[0], fab.nominal_capacity(probe.channels[0]) * 0.5);
    fab.flows().recompute_now();
    fab.flows().set_capacity(probe.channels[0], fab.nominal_capacity(probe.channels[0]));
    fab.flows().recompute_now();
  }
  state.counters["recomputes_per_s"] =
      benchmark::Counter(static_cast<double>(fab.flows().recomputes() - before), benchmark::Counter::kIsRate);
  state.counters["flows"] = static_cast<double>(fab.flows().active());
}
BENCHMARK(BM_FlowRecompute)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);

std::vector<hal::DeviceId> ep64() {
  std::vector<hal::DeviceId> m(64);
  for (int i = 0; i < 64; ++i) m[static_cast<std::size_t>(i)] = i;
  return m;
}

// Each iteration runs the calls in order on one EP64 group, arrivals and completion events included.
// Not cached: a fresh group per iteration, so every call prices a new signature.
void run_ep64_calls(benchmark::State& state, bool cached,
                    std::initializer_list<const std::vector<hal::CollectiveOp>*> calls) {
  rt::VirtualRuntime rt;
  fabric::Fabric fab(rt, rack(), fabric::FabricOptions{rt::Duration()});
  fabric::FabricCollectives coll(fab);
  auto group = coll.create_group("ep64", ep64());
  // Shared once, as a graph hands the same ops to its group step after step.
  std::vector<std::vector<hal::SharedCollectiveOp>> parts;
  for (const auto* ops : calls) parts.push_back(fabric::shared_parts(*ops));
  for (auto _ : state) {
    if (!cached) {
      state.PauseTiming();
      group = coll.create_group("ep64", ep64());
      state.ResumeTiming();
    }
    for (const auto& p : parts) {
      for (int r = 0; r < 64; ++r) group->arrive(r, p[static_cast<std::size_t>(r)], [](const hal::HalError*) {});
      rt.run();
    }
  }
}

// One EP64 dispatch of 128 tokens per rank (BF16 hidden 7168, top-8), arrivals and completion events
// included. cached: the group has priced this signature before (the steady state inside a decode graph).
void BM_Ep64Dispatch(benchmark::State& state) {
  const bool cached = state.range(0) != 0;
  const auto ops = fabric::uniform_all_to_all(64, 128 * 8 * 14336 / 64, hal::AllToAllRole::moe_dispatch);
  run_ep64_calls(state, cached, {&ops});
}
BENCHMARK(BM_Ep64Dispatch)->Arg(0)->Arg(1)->ArgName("cached")->Unit(benchmark::kMicrosecond);

// One decode step's MoE exchange as the engine sends it: ranks hold different token counts (1 to 6, fixed
// LCG), so a dispatch row is one size per sender and a combine row one size per receiver, with empty pairs.
// Each iteration has a new signature (priced) unless cached: then the same pair of calls repeats.
void BM_Ep64DecodeStep(benchmark::State& state) {
  const bool cached = state.range(0) != 0;
  std::uint64_t x = 777;
  std::vector<std::uint64_t> tokens(64);
  for (auto& t : tokens) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    t = 1 + (x >> 33) % 6;
  }
  auto dispatch = fabric::uniform_all_to_all(64, 0, hal::AllToAllRole::moe_dispatch);
  auto combine = fabric::uniform_all_to_all(64, 0, hal::AllToAllRole::moe_combine);
  for (std::size_t i = 0; i < 64; ++i) {
    for (std::size_t j = 0; j < 64; ++j) {
      if (i == j) continue;
      dispatch[i].send_bytes[j] = tokens[i] * 792;
      combine[i].send_bytes[j] = (i + j) % 3 == 0 ? 0 : tokens[j] * 1536;
    }
  }
  run_ep64_calls(state, cached, {&dispatch, &combine});
}
BENCHMARK(BM_Ep64DecodeStep)->Arg(0)->Arg(1)->ArgName("cached")->Unit(benchmark::kMicrosecond);

// Decode steps as a long run meets them: one group, and every step new token counts per rank (1 to 6,
// fixed LCG), so each of its two calls is a new signature, priced with what the group kept from before.
void BM_Ep64DecodeSteps(benchmark::State& state) {
  rt::VirtualRuntime rt;
  fabric::Fabric fab(rt, rack(), fabric::FabricOptions{rt::Duration()});
  fabric::FabricCollectives coll(fab);
  auto group = coll.create_group("ep64", ep64());
  auto dispatch = fabric::uniform_all_to_all(64, 0, hal::AllToAllRole::moe_dispatch);
  auto combine = fabric::uniform_all_to_all(64, 0, hal::AllToAllRole::moe_combine);
  std::uint64_t x = 4242;
  std::vector<std::uint64_t> tokens(64);
  for (auto _ : state) {
    for (auto& t : tokens) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      t = 1 + (x >> 33) % 6;
    }
    for (std::size_t i = 0; i < 64; ++i) {
      for (std::size_t j = 0; j < 64; ++j) {
        if (i == j) continue;
        dispatch[i].send_bytes[j] = tokens[i] * 792;
        combine[i].send_bytes[j] = (i + j) % 3 == 0 ? 0 : tokens[j] * 1536;
      }
    }
    for (const auto* ops : {&dispatch, &combine}) {
      const auto parts = fabric::shared_parts(*ops);
      for (int r = 0; r < 64; ++r) group->arrive(r, parts[static_cast<std::size_t>(r)], [](const hal::HalError*) {});
      rt.run();
    }
  }
}
BENCHMARK(BM_Ep64DecodeSteps)->Unit(benchmark::kMicrosecond);

// A fresh EP64 all-to-all of unequal sizes per call, as sampled expert routing sends one every step:
// rank r has 1..64 tokens (decode) or 2K..16K (a prefill chunk), each token picks its top-8 of 256
// experts by Zipf(skew) popularity (4 experts per rank), 7,168 bytes per token and expert. The matrices
// are drawn up front; the group is made afresh (untimed) when they come round again, so every call
// prices a new signature, arrivals and completion events included.
void BM_Ep64SampledAllToAll(benchmark::State& state) {
  const bool prefill = state.range(0) != 0;
  fabric::SampledRouting routing;
  routing.skew = static_cast<double>(state.range(1)) / 10;
  const int matrices = prefill ? 4 : 64;
  std::uint64_t x = 2024;
  std::vector<std::vector<hal::SharedCollectiveOp>> calls;
  for (int m = 0; m < matrices; ++m) {
    std::vector<int> tokens(64);
    for (auto& t : tokens) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      t = prefill ? 2048 + static_cast<int>((x >> 33) % 14337) : 1 + static_cast<int>((x >> 33) % 64);
    }
    calls.push_back(fabric::shared_parts(fabric::sampled_all_to_all(routing, tokens, static_cast<std::uint64_t>(m))));
  }
  rt::VirtualRuntime rt;
  fabric::Fabric fab(rt, rack(), fabric::FabricOptions{rt::Duration()});
  fabric::FabricCollectives coll(fab);
  auto group = coll.create_group("ep64", ep64());
  std::size_t next = 0;
  for (auto _ : state) {
    if (next == calls.size()) {
      state.PauseTiming();
      group = coll.create_group("ep64", ep64());
      next = 0;
      state.ResumeTiming();
    }
    const auto& parts = calls[next++];
    for (int r = 0; r < 64; ++r) group->arrive(r, parts[static_cast<std::size_t>(r)], [](const hal::HalError*) {});
    rt.run();
  }
}
BENCHMARK(BM_Ep64SampledAllToAll)
    ->ArgsProduct({{0, 1}, {0, 10}})
    ->ArgNames({"prefill", "skew10"})
    ->Unit(benchmark::kMicrosecond);

// The same dispatch as 4,032 live flows (the exact path, as when faults or other traffic are present).
void BM_Ep64DispatchExact(benchmark::State& state) {
  const auto ops = fabric::uniform_all_to_all(64, 128 * 8 * 14336 / 64, hal::AllToAllRole::moe_dispatch);
  for (auto _ : state) benchmark::DoNotOptimize(fabric::time_collective(rack(), ep64(), ops, false));
}
BENCHMARK(BM_Ep64DispatchExact)->Unit(benchmark::kMillisecond);

}  // namespace
