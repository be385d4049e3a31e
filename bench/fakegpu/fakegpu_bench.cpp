// How fast the device model prices work: kernels priced per second, and launches per second of a
// 78-layer decode graph (GLM-5 sized: 18 kernels and, with EP, 2 all-to-alls per layer).
#include <benchmark/benchmark.h>

#include "emu/rt/virtual_runtime.h"
#include "fakegpu/fake_graph_exec.h"
#include "fakegpu/gpu_fleet.h"

namespace nvl::fakegpu {
namespace {

using hal::DType;
using hal::KernelKind;

hal::KernelDesc k(KernelKind kind, DType dtype, std::uint64_t flops, std::uint64_t bytes, const char* name) {
  return hal::KernelDesc{kind, dtype, flops, bytes, name, {}};
}

// One decode layer at batch 64 per GPU (shapes only need to be plausible: pricing speed does not
// depend on them). `group` null: no collectives.
void add_layer(hal::Graph& g, const std::shared_ptr<hal::CommGroup>& group) {
  g.add(k(KernelKind::elementwise, DType::bf16, 1'000'000, 2'000'000, "input_norm"));
  g.add(k(KernelKind::gemm, DType::fp8, 1'600'000'000, 13'000'000, "q_a"));
  g.add(k(KernelKind::elementwise, DType::bf16, 300'000, 500'000, "q_norm"));
  g.add(k(KernelKind::gemm, DType::fp8, 3'400'000'000, 27'000'000, "q_b"));
  g.add(k(KernelKind::gemm, DType::fp8, 450'000'000, 3'600'000, "kv_a"));
  g.add(k(KernelKind::elementwise, DType::bf16, 100'000, 200'000, "kv_norm_rope"));
  g.add(k(KernelKind::gemm, DType::fp8, 500'000'000, 4'000'000, "indexer_q"));
  g.add(k(KernelKind::indexer, DType::fp8, 4'000'000'000, 600'000'000, "indexer"));
  g.add(k(KernelKind::elementwise, DType::fp32, 0, 30'000'000, "topk"));
  g.add(k(KernelKind::attn_decode, DType::bf16, 9'600'000'000, 160'000'000, "attn"));
  g.add(k(KernelKind::gemm, DType::fp8, 6'400'000'000, 51'000'000, "o_proj"));
  g.add(k(KernelKind::elementwise, DType::bf16, 1'000'000, 2'000'000, "post_norm"));
  g.add(k(KernelKind::gemm, DType::bf16, 200'000'000, 3'200'000, "router"));
  hal::CollectiveOp a2a;
  a2a.kind = hal::CollectiveKind::all_to_all;
  if (group) {
    a2a.name = "dispatch";
    g.add(hal::CollectiveCall{group, 0, a2a});
  }
  g.add(k(KernelKind::moe_gemm, DType::fp8, 12'000'000'000, 100'000'000, "experts_up"));
  g.add(k(KernelKind::elementwise, DType::bf16, 5'000'000, 10'000'000, "act"));
  g.add(k(KernelKind::moe_gemm, DType::fp8, 6'000'000'000, 50'000'000, "experts_down"));
  g.add(k(KernelKind::gemm, DType::fp8, 4'800'000'000, 38'000'000, "shared_expert"));
  if (group) {
    a2a.name = "combine";
    g.add(hal::CollectiveCall{group, 0, a2a});
  }
  g.add(k(KernelKind::elementwise, DType::bf16, 1'000'000, 2'000'000, "residual"));
}

hal::Graph decode_graph(const std::shared_ptr<hal::CommGroup>& group) {
  hal::Graph g("decode");
  for (int layer = 0; layer < 78; ++layer) add_layer(g, group);
  return g;
}

// A one-member group that completes each collective after a fixed delay.
class LoopbackGroup final : public hal::CommGroup {
 public:
  explicit LoopbackGroup(rt::Runtime& rt) : rt_(rt) {}
  const std::string& name() const override { return name_; }
  const std::vector<hal::DeviceId>& members() const override { return members_; }
  void arrive(int, hal::SharedCollectiveOp, hal::CollectiveDone done) override {
    rt_.call_after(rt::us(30), [done = std::move(done)] { done(nullptr); });
  }
  void repeat(int, hal::SharedCollectiveOp, std::size_t, rt::Duration, rt::Duration span,
              hal::CollectiveDone done) override {
    rt_.call_after(span, [done = std::move(done)] { done(nullptr); });
  }

 private:
  rt::Runtime& rt_;
  std::string name_ = "loopback";
  std::vector<hal::DeviceId> members_{0};
};

// Kernel prices: KernelDesc to a price at full shares.
void BM_KernelPrice(benchmark::State& state) {
  const DeviceProfile p = load_device_profile_named("b300");
  const CostModel model(p, 0);
  hal::Graph g = decode_graph(nullptr);
  std::vector<hal::KernelDesc> kernels;
  for (const auto& n : g.nodes()) kernels.push_back(std::get<hal::KernelDesc>(n));
  std::size_t i = 0;
  for (auto _ : state) {
    const KernelCost c = model.cost(kernels[i], p.kernel_launch);
    benchmark::DoNotOptimize(price_ns(c, RunShares{}));
    if (++i == kernels.size()) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_KernelPrice);

// Pricing a whole 78-layer graph from its kernel descriptions (what instantiation does once).
void BM_GraphPriceFromScratch(benchmark::State& state) {
  const DeviceProfile p = load_device_profile_named("b300");
  const CostModel model(p, 0);
  const hal::Graph g = decode_graph(nullptr);
  for (auto _ : state) {
    double ns = static_cast<double>(p.graph_launch.ns());
    for (const auto& n : g.nodes()) ns += price_ns(model.cost(std::get<hal::KernelDesc>(n), p.graph_node), RunShares{});
    benchmark::DoNotOptimize(ns);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["kernels"] = static_cast<double>(g.kernel_count());
}
BENCHMARK(BM_GraphPriceFromScratch);

// Re-pricing an instantiated graph at new shares (what a launch costs when its shares changed).
void BM_GraphRepriceInstantiated(benchmark::State& state) {
  const DeviceProfile p = load_device_profile_named("b300");
  const CostModel model(p, 0);
  const FakeGraphExec exec(decode_graph(nullptr), model, p, 0);
  double share = 0.5;
  for (auto _ : state) {
    double ns = 0;
    for (const auto& seg : exec.segments()) {
      for (const auto& c : exec.kernels(seg)) ns += price_ns(c, RunShares{share, 1.0});
    }
    benchmark::DoNotOptimize(ns);
    share = share == 0.5 ? 0.6 : 0.5;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GraphRepriceInstantiated);

// One kernel launched and completed on the virtual runtime.
void BM_KernelLaunchOnRuntime(benchmark::State& state) {
  rt::VirtualRuntime rt;
  auto fleet = GpuFleet::load(rt, "b300", 1);
  hal::Stream& s = fleet->device(0).create_stream("bench");
  const auto kernel = k(KernelKind::gemm, DType::fp8, 1'000'000'000, 10'000'000, "gemm");
  for (auto _ : state) {
    s.launch(kernel);
    rt.run();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_KernelLaunchOnRuntime);

// A 78-layer decode graph launched and completed on the virtual runtime: one event per launch.
void BM_DecodeGraphLaunch(benchmark::State& state) {
  rt::VirtualRuntime rt;
  auto fleet = GpuFleet::load(rt, "b300", 1);
  FakeDevice& gpu = fleet->device(0);
  hal::Stream& s = gpu.create_stream("bench");
  const auto exec = gpu.instantiate(decode_graph(nullptr));
  for (auto _ : state) {
    s.launch(exec);
    rt.run();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecodeGraphLaunch);

// The same with the 156 all-to-alls of EP: 157 segments and 156 collective completions per launch.
void BM_DecodeGraphLaunchWithCollectives(benchmark::State& state) {
  rt::VirtualRuntime rt;
  auto fleet = GpuFleet::load(rt, "b300", 1);
  FakeDevice& gpu = fleet->device(0);
  hal::Stream& s = gpu.create_stream("bench");
  const auto exec = gpu.instantiate(decode_graph(std::make_shared<LoopbackGroup>(rt)));
  for (auto _ : state) {
    s.launch(exec);
    rt.run();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecodeGraphLaunchWithCollectives);

// The same 78 layers as one repeated body (as the engine builds them): two iterations run exactly,
// the other 76 as one extrapolated wait.
void BM_RepeatedDecodeGraphLaunchWithCollectives(benchmark::State& state) {
  rt::VirtualRuntime rt;
  auto fleet = GpuFleet::load(rt, "b300", 1);
  FakeDevice& gpu = fleet->device(0);
  hal::Stream& s = gpu.create_stream("bench");
  hal::Graph layer("layer");
  add_layer(layer, std::make_shared<LoopbackGroup>(rt));
  hal::Graph g("decode");
  g.add_repeat(std::move(layer), 78);
  const auto exec = gpu.instantiate(g);
  for (auto _ : state) {
    s.launch(exec);
    rt.run();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RepeatedDecodeGraphLaunchWithCollectives);

}  // namespace
}  // namespace nvl::fakegpu
