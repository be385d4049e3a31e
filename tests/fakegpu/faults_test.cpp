// Device faults: Xid 79 (lost), Xid 48 (ECC, reset), Xid 74 (NVLink, to listeners), thermal
// throttle; each fault and each failed operation is in the event log.
#include <gtest/gtest.h>

#include "engine/hal/buffer.h"
#include "engine/hal/hal_error.h"
#include "rig.h"

namespace nvl::fakegpu {
namespace faults_test {

using hal::DType;
using hal::KernelKind;
using testing::kernel;
using testing::Rig;

const hal::KernelDesc kLong = kernel(KernelKind::gemm, DType::fp8, 1'000'000'000'000ULL, 0, "long");

TEST(Faults, GpuLostFailsEverythingForGood) {
  Rig rig("gb300", 2);
  FakeDevice& gpu = rig.gpu(0);
  hal::Buffer weights = gpu.memory().allocate(1'000'000, "weights");
  hal::Stream& s = gpu.create_stream("main");
  auto done = gpu.create_event("done");
  std::vector<const hal::HalError*> callback_errors;
  hal::Xid callback_xid = hal::Xid::none;
  s.launch(kLong);
  s.launch(kLong);
  s.record(*done);
  s.add_callback([&](const hal::HalError* e) {
    callback_errors.push_back(e);
    if (e != nullptr) callback_xid = e->cause();
  });
  std::vector<DeviceFault> heard;
  gpu.add_fault_listener([&](const DeviceFault& f) { heard.push_back(f); });
  rig.rt.call_after(rt::us(10), [&] { gpu.inject_gpu_lost(); });
  rig.in_fiber([&] {
    try {
      s.synchronize();
      ADD_FAILURE() << "expected Xid 79";
    } catch (const hal::HalError& e) {
      EXPECT_EQ(e.cause(), hal::Xid::gpu_lost);
      EXPECT_EQ(e.device(), 0);
    }
    EXPECT_EQ(rig.rt.now(), rt::Time() + rt::us(10)) << "failed at the fault, not at the kernel's end";
    EXPECT_THROW(done->synchronize(), hal::HalError);
  });
  EXPECT_EQ(gpu.health(), hal::DeviceHealth::lost);
  ASSERT_EQ(callback_errors.size(), 1u);
  EXPECT_EQ(callback_xid, hal::Xid::gpu_lost);
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_EQ(heard[0].xid, hal::Xid::gpu_lost);
  // Memory is gone; later work and allocations fail at once; reset cannot help.
  EXPECT_EQ(gpu.memory().used_bytes(), 0u);
  EXPECT_THROW(gpu.memory().allocate(1, "x"), hal::HalError);
  EXPECT_THROW(s.launch(kLong), hal::HalError);
  EXPECT_THROW(gpu.reset(), hal::HalError);
  weights.reset();  // freeing after the loss is harmless
  // The other GPU is untouched.
  EXPECT_EQ(rig.gpu(1).health(), hal::DeviceHealth::healthy);
  EXPECT_EQ(rig.count("fault"), 1);
  // 2 kernels, the record, the callback; then the allocation, the launch and the reset refused.
  EXPECT_EQ(rig.count("op_failed"), 4 + 3);
  EXPECT_EQ(rig.rt.log().error_count(), 0u) << "injected faults are warnings";
}

TEST(Faults, EccFailsTheRunningWorkUntilReset) {
  Rig rig("h800");
  FakeDevice& gpu = rig.gpu();
  hal::Stream& s = gpu.create_stream("main");
  s.launch(kLong);
  s.launch(kLong);
  rig.rt.call_after(rt::us(50), [&] { gpu.inject_ecc_error(); });
  rig.in_fiber([&] {
    try {
      s.synchronize();
      ADD_FAILURE() << "expected Xid 48";
    } catch (const hal::HalError& e) {
      EXPECT_EQ(e.cause(), hal::Xid::ecc_uncorrectable);
    }
    EXPECT_EQ(gpu.health(), hal::DeviceHealth::needs_reset);
    try {
      s.launch(kLong);
      ADD_FAILURE() << "expected a refusal until reset";
    } catch (const hal::HalError& e) {
      EXPECT_EQ(e.cause(), hal::Xid::ecc_uncorrectable);
    }
    gpu.reset();
    EXPECT_EQ(gpu.health(), hal::DeviceHealth::healthy);
    const rt::Time start = rig.rt.now();
    s.launch(kLong);
    s.synchronize();  // no error left over
    EXPECT_EQ(rig.rt.now() - start, gpu.cost_model().kernel_time(kLong));
  });
  EXPECT_EQ(rig.count("fault"), 1);
  EXPECT_EQ(rig.count("op_failed"), 2 + 1);  // the two kernels, then the refused launch
  EXPECT_EQ(rig.count("reset"), 1);
}

TEST(Faults, NvlinkErrorGoesToListenersAndTheLog) {
  Rig rig("gb300");
  std::vector<DeviceFault> heard;
  rig.gpu().add_fault_listener([&](const DeviceFault& f) { heard.push_back(f); });
  hal::Stream& s = rig.gpu().create_stream("main");
  s.launch(kLong);
  rig.gpu().inject_nvlink_error(7);
  rig.rt.run();
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_EQ(heard[0].xid, hal::Xid::nvlink_error);
  EXPECT_EQ(heard[0].link, 7);
  EXPECT_EQ(rig.gpu().health(), hal::DeviceHealth::healthy) << "the fabric decides what an NVLink error costs";
  EXPECT_EQ(rig.count("op_failed"), 0);
  EXPECT_EQ(rig.count("fault"), 1);
}

TEST(Faults, ThermalThrottleSlowsComputeForAPeriod) {
  Rig rig("b300");
  FakeDevice& gpu = rig.gpu();
  hal::Stream& s = gpu.create_stream("main");
  const rt::Duration nominal = gpu.cost_model().kernel_time(kLong);
  gpu.throttle(0.5, nominal * 10);
  EXPECT_DOUBLE_EQ(gpu.clock_factor(), 0.5);
  rig.in_fiber([&] {
    const rt::Time start = rig.rt.now();
    s.launch(kLong);
    s.synchronize();
    const auto throttled = rig.rt.now() - start;
    EXPECT_GT(throttled.ns(), nominal.ns() * 19 / 10);  // compute at half the clock; launch overhead not
    rig.rt.sleep(nominal * 10);
    EXPECT_DOUBLE_EQ(gpu.clock_factor(), 1.0);
    const rt::Time again = rig.rt.now();
    s.launch(kLong);
    s.synchronize();
    EXPECT_EQ(rig.rt.now() - again, nominal);
  });
  EXPECT_EQ(rig.count("thermal_throttle"), 1);
  EXPECT_EQ(rig.count("thermal_throttle_end"), 1);
  EXPECT_THROW(gpu.throttle(0.0, rt::ms(1)), std::invalid_argument);
  EXPECT_THROW(gpu.throttle(0.5, rt::Duration()), std::invalid_argument);
}

TEST(Faults, ThermalThrottleSlowsMemoryBoundKernelsLess) {
  Rig rig("b300");
  FakeDevice& gpu = rig.gpu();
  hal::Stream& s = gpu.create_stream("main");
  // 100 GB read, no flops: HBM-bound (a decode step's weight and KV reads are).
  const hal::KernelDesc reads = kernel(KernelKind::elementwise, DType::bf16, 0, 100'000'000'000ULL, "reads");
  const KernelCost c = gpu.cost_model().cost(reads, rig.fleet->profile().kernel_launch);
  ASSERT_EQ(c.compute_ns, 0.0);
  // b300.json: throttle_memory_coupling 0.5, so at half the clock memory runs at 1 - 0.5 x 0.5 = 0.75.
  gpu.throttle(0.5, rt::ms(100'000));
  EXPECT_DOUBLE_EQ(gpu.memory_factor(), 0.75);
  rig.in_fiber([&] {
    const rt::Time start = rig.rt.now();
    s.launch(reads);
    s.synchronize();
    EXPECT_NEAR(static_cast<double>((rig.rt.now() - start).ns()), c.overhead_ns + c.memory_ns / 0.75, 2.0);
  });
}

TEST(Faults, ThrottleEndingMidKernelSpeedsItUp) {
  Rig rig("b300");
  FakeDevice& gpu = rig.gpu();
  hal::Stream& s = gpu.create_stream("main");
  const KernelCost c = gpu.cost_model().cost(kLong, rig.fleet->profile().kernel_launch);
  const double slow_total = c.overhead_ns + c.compute_ns / 0.5;
  const auto period = rt::Duration::nanoseconds(static_cast<std::int64_t>(slow_total / 2));
  gpu.throttle(0.5, period);
  s.launch(kLong);
  rig.rt.run();
  const double progress = static_cast<double>(period.ns()) / slow_total;
  EXPECT_NEAR(static_cast<double>(rig.rt.now().ns()),
              static_cast<double>(period.ns()) + (1 - progress) * (c.overhead_ns + c.compute_ns), 2.0);
}

TEST(Faults, SameRunSameLog) {
  auto run = [] {
    Rig rig("gb300", 2);
    hal::Stream& s = rig.gpu(0).create_stream("main");
    s.launch(kLong);
    s.launch(kLong);
    rig.gpu(0).throttle(0.7, rt::us(100));
    rig.rt.call_after(rt::us(300), [&] { rig.gpu(0).inject_ecc_error(); });
    rig.rt.run();
    return rig.rt.log().hash_hex();
  };
  EXPECT_EQ(run(), run());
}

}  // namespace faults_test
}  // namespace nvl::fakegpu
