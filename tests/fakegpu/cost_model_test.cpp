// The roofline with efficiency curves: small shapes are latency- or bandwidth-bound, large ones
// approach the calibrated efficiency; graphs launch cheaper than their kernels one by one.
#include <gtest/gtest.h>

#include "engine/hal/hal_error.h"
#include "fakegpu/cost_model.h"
#include "fakegpu/fake_graph_exec.h"
#include "fakegpu/profile_library.h"
#include "rig.h"

namespace nvl::fakegpu {
namespace cost_model_test {

using testing::kernel;
using hal::DType;
using hal::KernelKind;

class CostModelTest : public ::testing::Test {
 protected:
  DeviceProfile h800 = load_device_profile_named("h800");
  CostModel model{h800, 0};

  static hal::KernelDesc square_gemm(std::uint64_t n) {
    return kernel(KernelKind::gemm, DType::fp8, 2 * n * n * n, 4 * n * n);
  }
  // Achieved fraction of the FP8 peak for a compute-only GEMM of `flops`.
  double compute_efficiency(std::uint64_t flops) {
    const auto t = model.kernel_time(kernel(KernelKind::gemm, DType::fp8, flops, 0));
    return static_cast<double>(flops) / t.seconds() / h800.peak(DType::fp8);
  }
};

TEST_F(CostModelTest, EfficiencyRisesWithSizeTowardTheCalibratedValue) {
  const double calibrated = h800.efficiency.of(KernelKind::gemm).compute_efficiency[static_cast<int>(DType::fp8)];
  double previous = 0;
  for (std::uint64_t flops = 1'000'000; flops <= 10'000'000'000'000ULL; flops *= 10) {
    const double e = compute_efficiency(flops);
    EXPECT_GT(e, previous) << flops;
    EXPECT_LT(e, calibrated) << flops;
    previous = e;
  }
  EXPECT_LT(compute_efficiency(1'000'000), 0.01 * calibrated) << "a tiny kernel is latency-bound";
  EXPECT_GT(compute_efficiency(10'000'000'000'000ULL), 0.99 * calibrated);
}

TEST_F(CostModelTest, TinyKernelCostsAboutItsLaunch) {
  const auto t = model.kernel_time(kernel(KernelKind::elementwise, DType::bf16, 1000, 1000));
  EXPECT_GE(t, h800.kernel_launch);
  EXPECT_LT(t, h800.kernel_launch * 3);
}

TEST_F(CostModelTest, DecodeGemmIsBandwidthBound) {
  // Batch 64 against a 7168 x 2112 FP8 weight: the weight read dominates.
  const std::uint64_t m = 64, n = 2112, k = 7168;
  const auto desc = kernel(KernelKind::gemm, DType::fp8, 2 * m * n * k, n * k + m * k + 2 * m * n);
  const KernelCost c = model.cost(desc, rt::Duration());
  EXPECT_GT(c.memory_ns, c.compute_ns);
  // Doubling the FLOPs alone (same bytes) barely changes the time.
  auto heavier = desc;
  heavier.flops *= 2;
  EXPECT_EQ(model.kernel_time(heavier), model.kernel_time(desc));
}

TEST_F(CostModelTest, LargeGemmIsComputeBoundAndScalesWithFlops) {
  const auto a = square_gemm(8192);
  const auto b = square_gemm(16384);
  const KernelCost c = model.cost(a, rt::Duration());
  EXPECT_GT(c.compute_ns, 5 * c.memory_ns);
  const double ratio = static_cast<double>(model.kernel_time(b).ns()) / static_cast<double>(model.kernel_time(a).ns());
  EXPECT_NEAR(ratio, 8.0, 0.1);
}

TEST_F(CostModelTest, Fp8IsFasterThanBf16ForTheSameWork) {
  const auto fp8 = kernel(KernelKind::gemm, DType::fp8, 1'000'000'000'000ULL, 0);
  auto bf16 = fp8;
  bf16.dtype = DType::bf16;
  EXPECT_LT(model.kernel_time(fp8), model.kernel_time(bf16));
}

TEST_F(CostModelTest, MissingDtypeIsAHalError) {
  try {
    model.cost(kernel(KernelKind::gemm, DType::fp4, 1000, 1000, "fp4_gemm"), rt::Duration());
    FAIL() << "expected HalError";
  } catch (const hal::HalError& e) {
    EXPECT_EQ(e.device(), 0);
    EXPECT_NE(std::string(e.what()).find("fp4"), std::string::npos) << e.what();
  }
}

TEST_F(CostModelTest, GraphIsCheaperThanSeparateLaunches) {
  // A 78-layer decode-like step of small kernels.
  hal::Graph g("decode");
  rt::Duration separate;
  for (int layer = 0; layer < 78; ++layer) {
    for (int i = 0; i < 12; ++i) {
      const auto k = kernel(KernelKind::elementwise, DType::bf16, 100'000, 2'000'000);
      g.add(k);
      separate += model.kernel_time(k);
    }
  }
  const FakeGraphExec exec(g, model, h800, 0);
  EXPECT_LT(exec.compute_time(), separate);
  // The whole difference is overhead: (launch - node) per kernel, less one graph launch.
  const auto saved = (h800.kernel_launch - h800.graph_node) * (78 * 12) - h800.graph_launch;
  EXPECT_NEAR(static_cast<double>((separate - exec.compute_time()).ns()), static_cast<double>(saved.ns()), 78 * 12);
}

}  // namespace cost_model_test
}  // namespace nvl::fakegpu
