// Kernels beside a collective (hal::CollectiveCall::beside, what single-batch overlap launches): they
// run while the collective is in flight, on their share of the SMs, and the graph goes on once both
// are done.
#include <gtest/gtest.h>

#include "engine/hal/hal_error.h"
#include "fixed_latency_group.h"
#include "rig.h"

namespace nvl::fakegpu {
namespace kernels_beside_collective_test {

using hal::DType;
using hal::KernelKind;
using testing::FixedLatencyGroup;
using testing::kernel;
using testing::Rig;

const hal::KernelDesc kBefore = kernel(KernelKind::gemm, DType::fp8, 4'000'000'000, 0, "before");
// Compute-bound: 0.3 ms on a B300's FP8 peak; memory-bound: 1 GB, about 0.13 ms of its HBM.
const hal::KernelDesc kCompute = kernel(KernelKind::gemm, DType::fp8, 1'500'000'000'000ULL, 0, "down");
const hal::KernelDesc kMemory = kernel(KernelKind::elementwise, DType::bf16, 0, 1'000'000'000, "reads");

hal::CollectiveOp combine() {
  hal::CollectiveOp o;
  o.kind = hal::CollectiveKind::all_to_all;
  o.name = "combine";
  return o;
}

hal::SharedKernels list(std::vector<hal::KernelDesc> kernels) {
  return std::make_shared<const std::vector<hal::KernelDesc>>(std::move(kernels));
}

// One GPU: `before`, then the combine (a fixed latency) with `beside` on `fraction` of the SMs, then a
// last kernel. Returns when the graph ended and the rig's price of the kernels alone at full rate.
struct Ended {
  double end_ns = 0;
  double before_ns = 0;  // the graph launch, `before` and the last kernel
};

Ended run(const rt::Duration latency, hal::SharedKernels beside, double fraction) {
  Rig rig("b300");
  auto group = std::make_shared<FixedLatencyGroup>(rig.rt, "ep", std::vector<hal::DeviceId>{0}, latency);
  hal::Graph g("step");
  g.add(kBefore);
  hal::CollectiveCall call{group, 0, combine()};
  call.beside = std::move(beside);
  call.beside_sm_fraction = fraction;
  g.add(std::move(call));
  g.add(kBefore);
  hal::Stream& s = rig.gpu().create_stream("step");
  s.launch(rig.gpu().instantiate(g));
  Ended out;
  s.add_callback([&](const hal::HalError* e) {
    EXPECT_EQ(e, nullptr);
    out.end_ns = static_cast<double>(rig.rt.now().ns());
  });
  rig.rt.run();
  const auto& p = rig.fleet->profile();
  out.before_ns = static_cast<double>(p.graph_launch.ns()) + 2 * price_ns(rig.gpu().cost_model().cost(kBefore, p.graph_node), {});
  return out;
}

KernelCost cost(const hal::KernelDesc& k) {
  Rig rig("b300");
  return rig.gpu().cost_model().cost(k, rig.fleet->profile().graph_node);
}

TEST(KernelsBesideACollective, TheGraphWaitsForTheSlowerOfTheTwo) {
  const KernelCost down = cost(kCompute);
  ASSERT_GT(down.compute_ns, down.memory_ns);
  // Beside a 10 us combine, the compute-bound kernel on 0.75 of the SMs takes compute_ns / 0.75: it
  // sets the segment's end, and the combine costs nothing more.
  const Ended slow_kernels = run(rt::us(10), list({kCompute}), 0.75);
  const double kernels_ns = down.overhead_ns + down.compute_ns / 0.75;
  ASSERT_GT(kernels_ns, 10'000.0);
  EXPECT_NEAR(slow_kernels.end_ns, slow_kernels.before_ns + kernels_ns, 2.0);
  // Beside a combine longer than them, the kernels cost nothing more.
  const rt::Duration long_combine = rt::Duration::nanoseconds(static_cast<std::int64_t>(kernels_ns) + 50'000);
  const Ended slow_combine = run(long_combine, list({kCompute}), 0.75);
  EXPECT_NEAR(slow_combine.end_ns, slow_combine.before_ns + static_cast<double>(long_combine.ns()), 2.0);
  // In line instead (no overlap) they add up.
  const Ended in_line = [&] {
    Rig rig("b300");
    auto group = std::make_shared<FixedLatencyGroup>(rig.rt, "ep", std::vector<hal::DeviceId>{0}, rt::us(10));
    hal::Graph g("step");
    g.add(kBefore);
    g.add(kCompute);
    g.add(hal::CollectiveCall{group, 0, combine()});
    g.add(kBefore);
    rig.gpu().create_stream("step").launch(rig.gpu().instantiate(g));
    rig.rt.run();
    return Ended{static_cast<double>(rig.rt.now().ns()), 0};
  }();
  EXPECT_NEAR(in_line.end_ns, slow_kernels.before_ns + down.overhead_ns + down.compute_ns + 10'000, 2.0);
}

TEST(KernelsBesideACollective, MemoryBoundKernelsKeepTheWholeBandwidthOnFewerSms) {
  const KernelCost reads = cost(kMemory);
  ASSERT_GT(reads.memory_ns, reads.compute_ns);
  const Ended r = run(rt::us(1), list({kMemory}), 0.5);
  EXPECT_NEAR(r.end_ns, r.before_ns + reads.overhead_ns + reads.memory_ns, 2.0);
}

TEST(KernelsBesideACollective, CountAsTheGraphsKernelsAndItsComputeTime) {
  Rig rig("b300");
  auto group = std::make_shared<FixedLatencyGroup>(rig.rt, "ep", std::vector<hal::DeviceId>{0}, rt::us(1));
  hal::CollectiveCall call{group, 0, combine()};
  call.beside = list({kCompute, kMemory});
  hal::Graph g("step");
  g.add(kBefore);
  g.add(call);
  EXPECT_EQ(g.kernel_count(), 3u);
  const auto exec = rig.gpu().instantiate(g);
  const auto& p = rig.fleet->profile();
  const auto& m = rig.gpu().cost_model();
  const double expected = static_cast<double>(p.graph_launch.ns()) + price_ns(m.cost(kBefore, p.graph_node), {}) +
                          price_ns(m.cost(kCompute, p.graph_node), {}) + price_ns(m.cost(kMemory, p.graph_node), {});
  EXPECT_NEAR(static_cast<double>(dynamic_cast<const FakeGraphExec&>(*exec).compute_time().ns()), expected, 1.0);
}

// Two ranks step `layers` repeated layers whose combine has the down GEMM beside it; rank 1's
// attention is twice rank 0's. Returns when rank 0 ended.
double layered_end_ns(int layers, bool fast_forward) {
  Rig rig("b300", 2);
  rig.fleet->set_fast_forward(fast_forward);
  auto group = std::make_shared<FixedLatencyGroup>(rig.rt, "ep", std::vector<hal::DeviceId>{0, 1}, rt::us(40));
  const auto down = list({kernel(KernelKind::moe_gemm, DType::fp8, 60'000'000'000ULL, 40'000'000, "down")});
  double end = 0;
  for (int rank = 0; rank < 2; ++rank) {
    hal::Graph layer("layer");
    layer.add(kBefore);
    if (rank == 1) layer.add(kBefore);
    layer.add(hal::CollectiveCall{group, rank, combine()});
    hal::CollectiveCall c{group, rank, combine()};
    c.beside = down;
    c.beside_sm_fraction = 0.8;
    layer.add(std::move(c));
    hal::Graph step("step");
    step.add_repeat(layer, static_cast<std::size_t>(layers));
    hal::Stream& s = rig.gpu(rank).create_stream("step");
    s.launch(rig.gpu(rank).instantiate(step));
    if (rank == 0) s.add_callback([&](const hal::HalError*) { end = static_cast<double>(rig.rt.now().ns()); });
  }
  rig.rt.run();
  return end;
}

TEST(KernelsBesideACollective, FastForwardedLayersEndWhereReplayingThemWould) {
  const double fast = layered_end_ns(60, true);
  const double exact = layered_end_ns(60, false);
  EXPECT_NEAR(fast, exact, 60.0) << "up to a nanosecond's rounding per period";
  EXPECT_GT(fast, 60 * 40'000.0 * 2) << "both combines of every layer are waited for";
}

TEST(KernelsBesideACollective, AFailedCollectiveStopsTheKernelsBesideIt) {
  Rig rig("b300");
  auto group = std::make_shared<FixedLatencyGroup>(rig.rt, "ep", std::vector<hal::DeviceId>{0}, rt::us(1));
  group->fail_next = true;
  hal::CollectiveCall call{group, 0, combine()};
  call.beside = list({kCompute});
  hal::Graph g("step");
  g.add(call);
  hal::Stream& s = rig.gpu().create_stream("step");
  s.launch(rig.gpu().instantiate(g));
  bool failed = false;
  s.add_callback([&](const hal::HalError* e) { failed = e != nullptr; });
  s.launch(kBefore);
  rig.rt.run();
  EXPECT_TRUE(failed);
  // The stream went on at once: the kernel after the graph did not wait for the one beside the combine.
  const double after = price_ns(rig.gpu().cost_model().cost(kBefore, rig.fleet->profile().kernel_launch), {});
  EXPECT_NEAR(static_cast<double>(rig.rt.now().ns()), 1'000 + static_cast<double>(rig.fleet->profile().graph_launch.ns()) + after,
              2.0);
  EXPECT_EQ(rig.gpu().compute().running(), 0u);
}

TEST(KernelsBesideACollective, AShareOfTheSmsOutsideZeroToOneIsRefused) {
  Rig rig("b300");
  auto group = std::make_shared<FixedLatencyGroup>(rig.rt, "ep", std::vector<hal::DeviceId>{0}, rt::us(1));
  for (double bad : {0.0, -0.5, 1.5}) {
    hal::CollectiveCall call{group, 0, combine()};
    call.beside = list({kCompute});
    call.beside_sm_fraction = bad;
    EXPECT_THROW(hal::Graph("g").add(call), std::invalid_argument) << bad;
  }
}

}  // namespace kernels_beside_collective_test
}  // namespace nvl::fakegpu
