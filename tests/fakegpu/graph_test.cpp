// Graph launches: one event per segment between collectives, priced as the sum of the kernels with a
// per-graph launch overhead; collectives hand over to the group and wait for its slowest member.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/hal/hal_error.h"
#include "fixed_latency_group.h"
#include "rig.h"

namespace nvl::fakegpu {
namespace graph_test {

using hal::DType;
using hal::KernelKind;
using testing::FixedLatencyGroup;
using testing::kernel;
using testing::Rig;

hal::CollectiveOp op(hal::CollectiveKind kind, const std::string& name) {
  hal::CollectiveOp o;
  o.kind = kind;
  o.name = name;
  return o;
}

hal::Graph decode_layers(int layers) {
  hal::Graph g("decode");
  for (int l = 0; l < layers; ++l) {
    g.add(kernel(KernelKind::elementwise, DType::bf16, 1'000'000, 20'000'000, "norm"));
    g.add(kernel(KernelKind::gemm, DType::fp8, 2'000'000'000, 30'000'000, "qkv"));
    g.add(kernel(KernelKind::attn_decode, DType::bf16, 5'000'000'000, 200'000'000, "attn"));
    g.add(kernel(KernelKind::moe_gemm, DType::fp8, 8'000'000'000, 60'000'000, "experts"));
  }
  return g;
}

TEST(Graph, ALaunchWithoutCollectivesIsOneEvent) {
  Rig rig("gb300");
  hal::Stream& s = rig.gpu().create_stream("decode");
  const auto exec = rig.gpu().instantiate(decode_layers(78));
  const auto& fake = dynamic_cast<const FakeGraphExec&>(*exec);
  ASSERT_EQ(fake.segments().size(), 1u);
  const auto before = rig.rt.stats().events;
  s.launch(exec);
  rig.rt.run();
  EXPECT_EQ(rig.rt.stats().events - before, 1u);
  EXPECT_EQ(rig.rt.now(), rt::Time() + fake.compute_time());
}

TEST(Graph, PriceIsTheSumOfItsKernelsWithOneLaunchOverhead) {
  Rig rig("gb300");
  const auto& p = rig.fleet->profile();
  const auto& model = rig.gpu().cost_model();
  const hal::Graph g = decode_layers(3);
  double expected_ns = static_cast<double>(p.graph_launch.ns());
  for (const auto& node : g.nodes()) expected_ns += price_ns(model.cost(std::get<hal::KernelDesc>(node), p.graph_node), {});
  hal::Stream& s = rig.gpu().create_stream("decode");
  s.launch(rig.gpu().instantiate(g));
  rig.rt.run();
  EXPECT_NEAR(static_cast<double>(rig.rt.now().ns()), expected_ns, 1.0);
}

TEST(Graph, ReplaysAreIdenticalAndBackToBack) {
  Rig rig("gb300");
  hal::Stream& s = rig.gpu().create_stream("decode");
  const auto exec = rig.gpu().instantiate(decode_layers(10));
  for (int i = 0; i < 5; ++i) s.launch(exec);
  rig.rt.run();
  EXPECT_EQ(rig.rt.now(), rt::Time() + dynamic_cast<const FakeGraphExec&>(*exec).compute_time() * 5);
}

TEST(Graph, CollectivesWaitForTheSlowestMember) {
  Rig rig("gb300", 2);
  const rt::Duration latency = rt::us(20);
  auto group = std::make_shared<FixedLatencyGroup>(rig.rt, "ep", std::vector<hal::DeviceId>{0, 1}, latency);
  const auto attn = kernel(KernelKind::attn_decode, DType::bf16, 1'000'000'000, 100'000'000, "attn");
  const auto experts = kernel(KernelKind::moe_gemm, DType::fp8, 4'000'000'000, 50'000'000, "experts");
  std::vector<std::shared_ptr<const hal::GraphExec>> execs;
  for (int rank = 0; rank < 2; ++rank) {
    hal::Graph g("step");
    g.add(attn);
    if (rank == 1) g.add(attn);  // the slow rank: twice the attention work
    g.add(hal::CollectiveCall{group, rank, op(hal::CollectiveKind::all_to_all, "dispatch")});
    g.add(experts);
    g.add(hal::CollectiveCall{group, rank, op(hal::CollectiveKind::all_to_all, "combine")});
    execs.push_back(rig.gpu(rank).instantiate(g));
  }
  std::vector<rt::Time> done(2);
  for (int rank = 0; rank < 2; ++rank) {
    hal::Stream& s = rig.gpu(rank).create_stream("step");
    s.launch(execs[static_cast<std::size_t>(rank)]);
    s.add_callback([&, rank](const hal::HalError* e) {
      EXPECT_EQ(e, nullptr);
      done[static_cast<std::size_t>(rank)] = rig.rt.now();
    });
  }
  const auto before = rig.rt.stats().events;
  rig.rt.run();
  const auto& slow_exec = dynamic_cast<const FakeGraphExec&>(*execs[1]);
  const auto& slow = slow_exec.segments();
  const auto& p = rig.fleet->profile();
  auto seg_ns = [&](const FakeGraphExec::Segment& s) {
    double ns = 0;
    for (const auto& c : slow_exec.kernels(s)) ns += price_ns(c, {});
    return ns;
  };
  // Both ranks leave the dispatch when the slow one has arrived, plus the latency.
  ASSERT_EQ(group->arrivals.size(), 4u);
  EXPECT_LT(group->arrivals[0].at, group->arrivals[1].at);
  EXPECT_EQ(group->arrivals[1].rank, 1);
  const double expected = seg_ns(slow[0]) + latency.ns() + seg_ns(slow[1]) + latency.ns() + seg_ns(slow[2]);
  EXPECT_NEAR(static_cast<double>(done[0].ns()), expected, 2.0);
  EXPECT_EQ(done[0], done[1]) << "the fast rank waited for the slow one";
  EXPECT_GT(slow_exec.kernels(slow[0]).front().overhead_ns, static_cast<double>(p.graph_node.ns())) << "graph launch first";
  // 3 compute segments per rank + 2 collective completions, not one event per kernel.
  EXPECT_LE(rig.rt.stats().events - before, 3u * 2 + 2);
}

// Two ranks run `layers` MoE-like layers (the second rank twice as slow in attention), either unrolled
// or as a repeated body; returns when each rank finished, how many events the run took, and each rank's
// kernel time by kind, with each kind's kernel priced alone (graph-node overhead included).
struct LayeredRun {
  std::vector<rt::Time> done;
  std::uint64_t events = 0;
  std::size_t arrivals = 0;
  std::vector<PricedTime> priced;
  std::map<KernelKind, double> kernel_ns;
  double graph_launch_ns = 0;
};

LayeredRun run_layers(int layers, bool repeated) {
  Rig rig("gb300", 2);
  auto group = std::make_shared<FixedLatencyGroup>(rig.rt, "ep", std::vector<hal::DeviceId>{0, 1}, rt::us(20));
  const auto attn = kernel(KernelKind::attn_decode, DType::bf16, 1'000'000'000, 100'000'000, "attn");
  const auto experts = kernel(KernelKind::moe_gemm, DType::fp8, 4'000'000'000, 50'000'000, "experts");
  const auto residual = kernel(KernelKind::elementwise, DType::bf16, 0, 10'000'000, "residual");
  const auto embed = kernel(KernelKind::gemm, DType::fp8, 3'000'000'000, 10'000'000, "embed");
  const auto sample = kernel(KernelKind::sampler, DType::fp32, 1'000'000, 1'000'000, "sample");
  LayeredRun out;
  out.done.resize(2);
  std::vector<hal::Stream*> streams;
  for (int rank = 0; rank < 2; ++rank) {
    hal::Graph layer("layer");
    layer.add(attn);
    if (rank == 1) layer.add(attn);
    layer.add(hal::CollectiveCall{group, rank, op(hal::CollectiveKind::all_to_all, "dispatch")});
    layer.add(experts);
    layer.add(hal::CollectiveCall{group, rank, op(hal::CollectiveKind::all_to_all, "combine")});
    layer.add(residual);
    hal::Graph step("step");
    step.add(embed);
    if (repeated) {
      step.add_repeat(layer, static_cast<std::size_t>(layers));
    } else {
      for (int l = 0; l < layers; ++l) {
        for (const auto& node : layer.nodes()) {
          if (const auto* k = std::get_if<hal::KernelDesc>(&node)) step.add(*k);
          if (const auto* c = std::get_if<hal::CollectiveCall>(&node)) step.add(*c);
        }
      }
    }
    step.add(sample);
    EXPECT_EQ(step.collective_count(), static_cast<std::size_t>(2 * layers));
    hal::Stream& s = rig.gpu(rank).create_stream("step");
    s.launch(rig.gpu(rank).instantiate(step));
    s.add_callback([&out, &rig, rank](const hal::HalError* e) {
      EXPECT_EQ(e, nullptr);
      out.done[static_cast<std::size_t>(rank)] = rig.rt.now();
    });
  }
  rig.rt.run();
  out.events = rig.rt.stats().events;
  out.arrivals = group->arrivals.size();
  for (int rank = 0; rank < 2; ++rank) out.priced.push_back(rig.gpu(rank).priced_time());
  const auto& p = rig.fleet->profile();
  for (const auto& k : {attn, experts, residual, embed, sample}) {
    out.kernel_ns[k.kind] = price_ns(rig.gpu().cost_model().cost(k, p.graph_node), {});
  }
  out.graph_launch_ns = static_cast<double>(p.graph_launch.ns());
  return out;
}

TEST(Graph, ARepeatedBodyEndsWhenReplayingItWould) {
  const LayeredRun unrolled = run_layers(75, false);
  const LayeredRun repeated = run_layers(75, true);
  EXPECT_EQ(unrolled.done[0], unrolled.done[1]);
  // Exact up to nanosecond rounding of each period.
  EXPECT_NEAR(static_cast<double>(repeated.done[0].ns()), static_cast<double>(unrolled.done[0].ns()), 75.0);
  EXPECT_EQ(repeated.done[0], repeated.done[1]);
  EXPECT_EQ(unrolled.arrivals, 2u * 2 * 75);
  EXPECT_EQ(repeated.arrivals, 2u * 2 * 2) << "two iterations run exactly, the rest is extrapolated";
  EXPECT_LT(repeated.events * 10, unrolled.events);
}

// The device counts a graph's kernel time by kind (the run's report shows it); a repeated body's
// fast-forwarded iterations count as the replayed ones do.
TEST(Graph, KernelTimeIsCountedByKindWithEveryIterationOfARepeatedBody) {
  const LayeredRun unrolled = run_layers(75, false);
  const LayeredRun repeated = run_layers(75, true);
  for (int rank = 0; rank < 2; ++rank) {
    const PricedTime& priced = repeated.priced[static_cast<std::size_t>(rank)];
    const auto part = [&](KernelKind k) { return priced.part(static_cast<std::size_t>(k)).ns; };
    const double attn_layers = rank == 0 ? 75 : 150;  // rank 1 runs its attention twice a layer
    EXPECT_NEAR(part(KernelKind::attn_decode), attn_layers * repeated.kernel_ns.at(KernelKind::attn_decode), 1.0);
    EXPECT_NEAR(part(KernelKind::moe_gemm), 75 * repeated.kernel_ns.at(KernelKind::moe_gemm), 1.0);
    EXPECT_NEAR(part(KernelKind::elementwise), 75 * repeated.kernel_ns.at(KernelKind::elementwise), 1.0);
    EXPECT_NEAR(part(KernelKind::gemm), repeated.kernel_ns.at(KernelKind::gemm), 1e-6);
    EXPECT_NEAR(part(KernelKind::sampler), repeated.kernel_ns.at(KernelKind::sampler), 1e-6);
    EXPECT_EQ(priced.part(PricedTime::kGraphLaunch).ns, repeated.graph_launch_ns);
    for (std::size_t k = 0; k < PricedTime::kParts; ++k) {
      EXPECT_NEAR(priced.part(k).ns, unrolled.priced[static_cast<std::size_t>(rank)].part(k).ns, 1.0) << k;
      EXPECT_EQ(priced.part(k).measured_ns, 0) << "gb300 prices on the roofline unless a kernel library is chosen";
    }
  }
}

// With a detail observer a launch is told part by part: its kernels (each its share of its segment by
// its priced time alone), collectives and the fast-forwarded iterations tile the graph's span.
TEST(Graph, TheDetailObserverTilesALaunchWithItsKernelsCollectivesAndFastForwardedLayers) {
  Rig rig("gb300", 2);
  auto group = std::make_shared<FixedLatencyGroup>(rig.rt, "ep", std::vector<hal::DeviceId>{0, 1}, rt::us(20));
  const auto embed = kernel(KernelKind::gemm, DType::fp8, 3'000'000'000, 10'000'000, "embed");
  const auto attn = kernel(KernelKind::attn_decode, DType::bf16, 1'000'000'000, 100'000'000, "attn");
  const auto experts = std::make_shared<const std::vector<hal::KernelDesc>>(
      std::vector<hal::KernelDesc>{kernel(KernelKind::moe_gemm, DType::fp8, 4'000'000'000, 50'000'000, "experts")});
  struct Part {
    std::string name;
    rt::Time start, end;
    std::uint64_t bytes;
  };
  std::vector<Part> parts;
  std::optional<Part> graph;
  rig.gpu(0).set_detail_observer([&](const OpSpan& s) { parts.push_back({std::string(s.op), s.start, s.end, s.bytes}); });
  rig.gpu(0).set_span_observer([&](const OpSpan& s) { graph = Part{std::string(s.op), s.start, s.end, 0}; });
  for (int rank = 0; rank < 2; ++rank) {
    hal::Graph layer("layer");
    layer.add(attn);
    hal::CollectiveOp dispatch = op(hal::CollectiveKind::all_to_all, "dispatch");
    dispatch.send_bytes = {100, 200};
    layer.add(hal::CollectiveCall{group, rank, dispatch});
    layer.add(experts);
    layer.add(hal::CollectiveCall{group, rank, op(hal::CollectiveKind::all_to_all, "combine")});
    hal::Graph step("step");
    step.add(embed);
    step.add_repeat(layer, 10);
    rig.gpu(rank).create_stream("step").launch(rig.gpu(rank).instantiate(step));
  }
  rig.rt.run();
  ASSERT_TRUE(graph.has_value());
  std::vector<std::string> names;
  for (const Part& p : parts) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"graph launch", "embed", "attn", "dispatch", "experts", "combine", "attn",
                                             "dispatch", "experts", "combine", "8 more iterations (fast-forwarded)"}));
  EXPECT_EQ(parts.front().start, graph->start);
  EXPECT_EQ(parts.back().end, graph->end);
  for (std::size_t i = 1; i < parts.size(); ++i) EXPECT_EQ(parts[i].start, parts[i - 1].end) << "no gap before " << names[i];
  EXPECT_EQ(parts[3].bytes, 300u) << "an all-to-all's bytes sent";
  // Hand estimate: the first segment (launch, embed, attn) splits by each kernel's priced time alone.
  const auto alone = [&](const hal::KernelDesc& k) {
    return price_ns(rig.gpu().cost_model().cost(k, rig.fleet->profile().graph_node), {});
  };
  const auto ns = [](const Part& p) { return static_cast<double>((p.end - p.start).ns()); };
  EXPECT_NEAR(ns(parts[1]) / ns(parts[2]), alone(embed) / alone(attn), 0.01);
}

// Two ranks step 75 repeated memory-bound layers, each ending in an all-to-all; rank 1 may be
// throttled to half its clock. Returns when each rank's step ended.
std::vector<rt::Time> run_memory_bound_step(const hal::KernelDesc& reads, bool throttle) {
  Rig rig("gb300", 2);
  auto group = std::make_shared<FixedLatencyGroup>(rig.rt, "ep", std::vector<hal::DeviceId>{0, 1}, rt::us(20));
  if (throttle) rig.gpu(1).throttle(0.5, rt::sec(100));
  std::vector<rt::Time> done(2);
  for (int rank = 0; rank < 2; ++rank) {
    hal::Graph layer("layer");
    layer.add(reads);
    layer.add(hal::CollectiveCall{group, rank, op(hal::CollectiveKind::all_to_all, "dispatch")});
    hal::Graph step("step");
    step.add_repeat(layer, 75);
    hal::Stream& s = rig.gpu(rank).create_stream("step");
    s.launch(rig.gpu(rank).instantiate(step));
    s.add_callback([&done, &rig, rank](const hal::HalError*) { done[static_cast<std::size_t>(rank)] = rig.rt.now(); });
  }
  rig.rt.run(rt::RunOptions{rt::Time() + rt::sec(10)});
  return done;
}

TEST(Graph, AThrottledRankSlowsItsGroupsFastForwardedLayers) {
  const auto reads = kernel(KernelKind::elementwise, DType::bf16, 0, 1'000'000'000, "reads");
  const KernelCost c = [&] {
    Rig rig("gb300");
    return rig.gpu().cost_model().cost(reads, rig.fleet->profile().graph_node);
  }();
  ASSERT_EQ(c.compute_ns, 0.0);
  const std::vector<rt::Time> nominal = run_memory_bound_step(reads, false);
  const std::vector<rt::Time> throttled = run_memory_bound_step(reads, true);
  EXPECT_EQ(throttled[0], throttled[1]) << "the all-to-all holds rank 0 back for rank 1";
  // gb300.json: memory coupling 0.5, so rank 1's reads run at 1 - 0.5 x 0.5 = 0.75 of the HBM rate and
  // each of the 75 layers (73 of them fast-forwarded) takes memory_ns x (1/0.75 - 1) = memory_ns / 3 longer.
  const double expected = 75 * c.memory_ns / 3;
  EXPECT_NEAR(static_cast<double>((throttled[0] - nominal[0]).ns()), expected, expected * 0.01);
}

TEST(Graph, ShortRepeatsAndBodiesWithoutCollectivesAreReplayed) {
  const LayeredRun two = run_layers(2, true);
  const LayeredRun two_unrolled = run_layers(2, false);
  EXPECT_EQ(two.done[0], two_unrolled.done[0]);
  hal::Graph body("b");
  body.add(kernel(KernelKind::gemm, DType::fp8, 1'000'000'000, 1'000'000, "gemm"));
  hal::Graph g("g");
  g.add_repeat(body, 10);
  EXPECT_EQ(g.kernel_count(), 10u);
  Rig rig("gb300");
  const auto exec = rig.gpu().instantiate(g);
  rig.gpu().create_stream("s").launch(exec);
  rig.rt.run();
  EXPECT_EQ(rig.rt.now(), rt::Time() + dynamic_cast<const FakeGraphExec&>(*exec).compute_time());
  EXPECT_THROW(hal::Graph("nested").add_repeat(g, 2), std::invalid_argument);
  EXPECT_THROW(hal::Graph("zero").add_repeat(body, 0), std::invalid_argument);
}

TEST(Graph, AFailedCollectiveFailsTheGraphAndTheStreamGoesOn) {
  Rig rig("gb300", 2);
  auto group = std::make_shared<FixedLatencyGroup>(rig.rt, "ep", std::vector<hal::DeviceId>{0, 1}, rt::us(5));
  group->fail_next = true;
  std::vector<hal::Stream*> streams;
  for (int rank = 0; rank < 2; ++rank) {
    hal::Graph g("step");
    g.add(kernel(KernelKind::gemm, DType::fp8, 1'000'000'000, 1'000'000, "gemm"));
    g.add(hal::CollectiveCall{group, rank, op(hal::CollectiveKind::all_reduce, "ar")});
    g.add(kernel(KernelKind::gemm, DType::fp8, 1'000'000'000, 1'000'000, "after"));
    hal::Stream& s = rig.gpu(rank).create_stream("step");
    s.launch(rig.gpu(rank).instantiate(g));
    s.launch(kernel(KernelKind::elementwise, DType::bf16, 0, 1000, "next"));
    streams.push_back(&s);
  }
  rig.in_fiber([&] {
    for (auto* s : streams) {
      try {
        s->synchronize();
        ADD_FAILURE() << "expected the graph to fail";
      } catch (const hal::HalError& e) {
        EXPECT_EQ(e.cause(), hal::Xid::nvlink_error);
      }
      EXPECT_TRUE(s->idle()) << "the kernel after the failed graph still ran";
    }
  });
  EXPECT_EQ(rig.count("op_failed"), 2);
}

TEST(Graph, InstantiationChecksDeviceRankAndDtype) {
  Rig rig("h800", 2);
  auto group = std::make_shared<FixedLatencyGroup>(rig.rt, "g", std::vector<hal::DeviceId>{0, 1}, rt::us(1));
  hal::Graph wrong_rank("g");
  wrong_rank.add(hal::CollectiveCall{group, 1, hal::CollectiveOp{}});
  EXPECT_THROW(rig.gpu(0).instantiate(wrong_rank), std::invalid_argument);
  EXPECT_THROW(hal::Graph("g").add(hal::CollectiveCall{group, 2, hal::CollectiveOp{}}), std::invalid_argument);

  hal::Graph fp4("fp4");
  fp4.add(kernel(KernelKind::gemm, DType::fp4, 1000, 1000));
  EXPECT_THROW(rig.gpu(0).instantiate(fp4), hal::HalError);

  const auto exec = rig.gpu(0).instantiate(decode_layers(1));
  EXPECT_THROW(rig.gpu(1).create_stream("s").launch(exec), std::invalid_argument);
}

}  // namespace graph_test
}  // namespace nvl::fakegpu
