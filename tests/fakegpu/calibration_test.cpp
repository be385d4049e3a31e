// The device model against published measurements (REFERENCE.md §1.3), run on emulated devices.
// The published figure and the tolerance are stated in each test. (The GLM-5 HBM capacity check of
// REFERENCE.md §2, V6, needs the model's shapes and lives with the engine, issue [4/8].)
#include <gtest/gtest.h>

#include "fakegpu/calibration_kernels.h"
#include "fakegpu/profile_library.h"

namespace nvl::fakegpu {
namespace calibration_test {

double tflops(const DeviceProfile& p, const hal::KernelDesc& k) {
  return static_cast<double>(k.flops) / time_kernel_alone(p, load_host_profile_for(p), k).seconds() / 1e12;
}

double gb_per_s(const DeviceProfile& p, const hal::KernelDesc& k) {
  return static_cast<double>(k.bytes) / time_kernel_alone(p, load_host_profile_for(p), k).seconds() / 1e9;
}

TEST(Calibration, Fp8GemmOnH800ReachesDeepGemm) {
  // DeepGEMM README: up to 1,550 TFLOPS FP8 on H800. Tolerance 10% at large square shapes.
  const DeviceProfile h800 = load_device_profile_named("h800");
  for (std::uint64_t n : {4096, 8192, 16384}) {
    SCOPED_TRACE(n);
    EXPECT_NEAR(tflops(h800, square_fp8_gemm(n)), 1550.0, 155.0);
  }
}

TEST(Calibration, MlaDecodeOnH800ReachesFlashMla) {
  // FlashMLA README: 3,000 GB/s in the memory-bound configuration on H800. Tolerance 10%.
  const DeviceProfile h800 = load_device_profile_named("h800");
  for (std::uint64_t kv : {4096, 8192}) {
    SCOPED_TRACE(kv);
    EXPECT_NEAR(gb_per_s(h800, mla_decode_attention(128, kv, 16)), 3000.0, 300.0);
  }
}

TEST(Calibration, MlaDecodeOnH800IsComputeBoundWithManyHeads) {
  // FlashMLA README: 660 TFLOPS in the compute-bound configuration on H800 (128 query heads, as
  // absorbed MLA runs without tensor parallelism). Tolerance 10%.
  const DeviceProfile h800 = load_device_profile_named("h800");
  EXPECT_NEAR(tflops(h800, mla_decode_attention(128, 8192, 128)), 660.0, 66.0);
}

TEST(Calibration, DensePrefillAttentionOnB200) {
  // FlashMLA README (SM100 FMHA): 1,460 TFLOPS forward on B200. Tolerance 10%.
  const DeviceProfile b200 = load_device_profile_named("b200");
  for (std::uint64_t tokens : {8192, 16384}) {
    SCOPED_TRACE(tokens);
    EXPECT_NEAR(tflops(b200, dense_prefill_attention(1, tokens, 128)), 1460.0, 146.0);
  }
}

TEST(Calibration, MemoryBoundKernelsReachThePlanningFigure) {
  // TensorRT-LLM tech blog 14: memory-bound kernels reach about 80% of HBM bandwidth (B300: 8 TB/s).
  // Tolerance 10% for a 1 GB elementwise pass.
  const DeviceProfile b300 = load_device_profile_named("b300");
  hal::KernelDesc k{hal::KernelKind::elementwise, hal::DType::bf16, 0, 1'000'000'000, "pass", {}};
  EXPECT_NEAR(gb_per_s(b300, k), 0.8 * 8000.0, 640.0);
}

}  // namespace calibration_test
}  // namespace nvl::fakegpu
