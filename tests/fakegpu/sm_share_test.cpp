// SM fractions (green contexts) and concurrent streams sharing one device, as compute_engine.h
// documents: compute share = s * min(1, 1/S), memory share = s / S, re-priced as jobs come and go.
#include <cmath>

#include <gtest/gtest.h>

#include "rig.h"

namespace nvl::fakegpu {
namespace sm_share_test {

using hal::DType;
using hal::KernelKind;
using testing::kernel;
using testing::Rig;

const hal::KernelDesc kCompute = kernel(KernelKind::gemm, DType::fp8, 200'000'000'000ULL, 0, "compute");
const hal::KernelDesc kMemory = kernel(KernelKind::elementwise, DType::bf16, 0, 2'000'000'000ULL, "memory");

struct Timing {
  double overhead_ns;
  double compute_ns;
  double memory_ns;
};

Timing timing(Rig& rig, const hal::KernelDesc& k) {
  const KernelCost c = rig.gpu().cost_model().cost(k, rig.fleet->profile().kernel_launch);
  return {c.overhead_ns, c.compute_ns, c.memory_ns};
}

// When each stream's last work ends.
std::vector<double> finish_ns(Rig& rig, std::vector<hal::Stream*> streams) {
  std::vector<double> out(streams.size());
  for (std::size_t i = 0; i < streams.size(); ++i) {
    streams[i]->add_callback([&, i](const hal::HalError*) { out[i] = static_cast<double>(rig.rt.now().ns()); });
  }
  rig.rt.run();
  return out;
}

// One runtime per thread at a time (emu/rt): each case gets its own rig in its own scope.
TEST(SmShare, AFractionSlowsComputeWhenAlone) {
  Rig rig("b300");
  hal::Stream& half = rig.gpu().create_stream("half", 0.5);
  half.launch(kCompute);
  const Timing c = timing(rig, kCompute);
  EXPECT_NEAR(finish_ns(rig, {&half})[0], c.overhead_ns + c.compute_ns / 0.5, 1.0);
}

TEST(SmShare, AFractionAloneKeepsTheWholeBandwidth) {
  Rig rig("b300");
  hal::Stream& half = rig.gpu().create_stream("half", 0.5);
  half.launch(kMemory);
  const Timing m = timing(rig, kMemory);
  EXPECT_NEAR(finish_ns(rig, {&half})[0], m.overhead_ns + m.memory_ns, 1.0);
}

TEST(SmShare, TwoFullStreamsSplitTheDevice) {
  Rig rig("b300");
  hal::Stream& a = rig.gpu().create_stream("a");
  hal::Stream& b = rig.gpu().create_stream("b");
  a.launch(kCompute);
  b.launch(kCompute);
  const Timing c = timing(rig, kCompute);
  const auto done = finish_ns(rig, {&a, &b});
  EXPECT_NEAR(done[0], c.overhead_ns + 2 * c.compute_ns, 1.0);
  EXPECT_NEAR(done[1], done[0], 1.0);
}

TEST(SmShare, GreenContextsThatFitDoNotSlowEachOther) {
  Rig rig("b300");
  hal::Stream& big = rig.gpu().create_stream("big", 0.75);
  hal::Stream& small = rig.gpu().create_stream("small", 0.25);
  big.launch(kCompute);
  small.launch(kCompute);
  const Timing c = timing(rig, kCompute);
  const auto done = finish_ns(rig, {&big, &small});
  EXPECT_NEAR(done[0], c.overhead_ns + c.compute_ns / 0.75, 1.0);
  EXPECT_NEAR(done[1], c.overhead_ns + c.compute_ns / 0.25, 1.0);
}

TEST(SmShare, OversubscribedFractionsAreScaledDown) {
  Rig rig("b300");
  hal::Stream& a = rig.gpu().create_stream("a", 0.6);
  hal::Stream& b = rig.gpu().create_stream("b", 0.6);
  a.launch(kCompute);
  b.launch(kCompute);
  const Timing c = timing(rig, kCompute);
  const auto done = finish_ns(rig, {&a, &b});
  EXPECT_NEAR(done[0], c.overhead_ns + c.compute_ns / 0.5, 1.0);  // 0.6 * (1 / 1.2)
}

TEST(SmShare, MemoryBandwidthIsSplitByShare) {
  Rig rig("b300");
  hal::Stream& big = rig.gpu().create_stream("big", 0.75);
  hal::Stream& small = rig.gpu().create_stream("small", 0.25);
  big.launch(kMemory);
  small.launch(kMemory);
  const Timing m = timing(rig, kMemory);
  const auto done = finish_ns(rig, {&big, &small});
  EXPECT_NEAR(done[0], m.overhead_ns + m.memory_ns / 0.75, 1.0);
  // Then `small` has HBM to itself: 3/4 of its work left at 1/4 of the rate, the rest at full rate.
  const double t_big = done[0];
  const double progress = t_big / (m.overhead_ns + m.memory_ns / 0.25);
  EXPECT_NEAR(done[1], t_big + (1 - progress) * (m.overhead_ns + m.memory_ns), 2.0);
}

TEST(SmShare, ARunningKernelSlowsWhenAnotherStartsBesideIt) {
  Rig rig("b300");
  hal::Stream& a = rig.gpu().create_stream("a");
  hal::Stream& b = rig.gpu().create_stream("b");
  const Timing c = timing(rig, kCompute);
  const double alone = c.overhead_ns + c.compute_ns;
  a.launch(kCompute);
  const auto half_way = rt::Duration::nanoseconds(std::llround(alone / 2));
  double b_done = 0;
  rig.rt.call_after(half_way, [&] {
    b.launch(kCompute);
    b.add_callback([&](const hal::HalError*) { b_done = static_cast<double>(rig.rt.now().ns()); });
  });
  std::vector<double> done = finish_ns(rig, {&a});
  done.push_back(b_done);
  // Half of a's work is left when b starts; it then runs at half the compute rate.
  const double shared = c.overhead_ns + 2 * c.compute_ns;
  EXPECT_NEAR(done[0], static_cast<double>(half_way.ns()) + 0.5 * shared, 2.0);
  // b ran shared until a finished, then alone.
  const double b_progress = (done[0] - static_cast<double>(half_way.ns())) / shared;
  EXPECT_NEAR(done[1], done[0] + (1 - b_progress) * alone, 2.0);
}

TEST(SmShare, StreamsTakingTurnsRunTheirKernelsOneAfterTheOther) {
  Rig rig("b300");
  hal::Stream& a = rig.gpu().create_stream("a");
  hal::Stream& b = rig.gpu().create_stream_taking_turns("b", a);
  EXPECT_EQ(b.sm_fraction(), a.sm_fraction());
  // a, b, a: b's kernel waits for a's first, a's second for b's (the order they became ready in).
  a.launch(kCompute);
  b.launch(kCompute);
  a.launch(kCompute);
  const Timing c = timing(rig, kCompute);
  const double alone = c.overhead_ns + c.compute_ns;
  const auto done = finish_ns(rig, {&a, &b});
  EXPECT_NEAR(done[1], 2 * alone, 2.0);
  EXPECT_NEAR(done[0], 3 * alone, 3.0);
}

TEST(SmShare, AStreamNotTakingTurnsSharesTheSmsWithTheOneWhoseTurnItIs) {
  Rig rig("b300");
  hal::Stream& x = rig.gpu().create_stream("x");
  hal::Stream& y = rig.gpu().create_stream_taking_turns("y", x);
  hal::Stream& z = rig.gpu().create_stream("z");
  x.launch(kCompute);
  y.launch(kCompute);
  z.launch(kCompute);
  const Timing c = timing(rig, kCompute);
  const double alone = c.overhead_ns + c.compute_ns;
  const auto shared_done = finish_ns(rig, {&x, &y, &z});
  // x and z split the device (2 x compute each), then y runs alone.
  EXPECT_NEAR(shared_done[0], c.overhead_ns + 2 * c.compute_ns, 2.0);
  EXPECT_NEAR(shared_done[2], shared_done[0], 2.0);
  EXPECT_NEAR(shared_done[1], shared_done[0] + alone, 3.0);
}

TEST(SmShare, AStreamTakesTurnsOnlyWithAStreamOfItsDevice) {
  Rig rig("b300", 2);
  hal::Stream& a = rig.gpu(0).create_stream("a");
  EXPECT_THROW(rig.gpu(1).create_stream_taking_turns("b", a), std::invalid_argument);
}

TEST(SmShare, AFaultDrainsAStreamWaitingForItsTurn) {
  Rig rig("b300");
  hal::Stream& a = rig.gpu().create_stream("a");
  hal::Stream& b = rig.gpu().create_stream_taking_turns("b", a);
  a.launch(kCompute);
  b.launch(kCompute);  // waits for a's kernel
  int failed = 0;
  for (hal::Stream* s : {&a, &b}) {
    s->add_callback([&](const hal::HalError* e) { failed += e != nullptr; });
  }
  rig.rt.call_after(rt::Duration::nanoseconds(1'000), [&] { rig.gpu().inject_ecc_error(); });
  rig.rt.run();
  EXPECT_EQ(failed, 2);
  EXPECT_EQ(rig.gpu().compute().running(), 0u);
}

}  // namespace sm_share_test
}  // namespace nvl::fakegpu
