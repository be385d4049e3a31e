// Weight dtypes by name: NVFP4 routed experts take 9/16 of a byte a weight, their grouped GEMMs run at
// the FP4 peak, and a GPU without one is refused.
#include <string>

#include <gtest/gtest.h>

#include "engine/exec/layer_kernels.h"
#include "engine/model/weight_dtypes.h"
#include "engine/model/weight_footprint.h"
#include "fakegpu/cost_model.h"
#include "fakegpu/profile_library.h"

namespace nvl::engine {
namespace weight_dtypes_test {

using hal::DType;

ModelProfile load(const std::string& name) { return load_model_profile(model_profile_path(name)); }

std::string error_of(std::string_view name) {
  try {
    weight_dtypes_from_name(name);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(WeightDtypes, NamesGiveTheRecipesDtypes) {
  const WeightDtypes fp8 = weight_dtypes_from_name("fp8");
  EXPECT_EQ(fp8.routed_experts, DType::fp8);
  EXPECT_EQ(fp8.attention, DType::fp8);
  EXPECT_EQ(fp8.embedding, DType::bf16);
  const WeightDtypes nvfp4 = weight_dtypes_from_name("nvfp4");
  for (DType d : {nvfp4.routed_experts, nvfp4.shared_experts, nvfp4.dense}) EXPECT_EQ(d, DType::fp4) << "the MLPs";
  EXPECT_EQ(nvfp4.attention, DType::bf16) << "ModelOpt leaves self_attn out";
  EXPECT_EQ(nvfp4.embedding, DType::bf16);
  const WeightDtypes bf16 = weight_dtypes_from_name("bf16");
  for (DType d : {bf16.attention, bf16.routed_experts, bf16.shared_experts, bf16.dense, bf16.embedding}) {
    EXPECT_EQ(d, DType::bf16);
  }
  for (const char* bad : {"fp4", "FP8", "int4", ""}) {
    const std::string e = error_of(bad);
    EXPECT_NE(e.find("\"bf16\", \"fp8\" or \"nvfp4\""), std::string::npos) << bad << ": " << e;
  }
}

TEST(WeightDtypes, Nvfp4TakesNineSixteenthsOfAByteAWeight) {
  EXPECT_EQ(weight_bytes(1'600, DType::fp4), 900u) << "800 B of values and 100 one-byte scales";
  EXPECT_EQ(weight_bytes(1'600, DType::fp8), 1'600u);
  EXPECT_EQ(weight_bytes(1'600, DType::bf16), 3'200u);
}

TEST(WeightDtypes, Nvfp4Glm5HoldsItsMlpsInFp4AndAttentionInBf16) {
  const ModelProfile m = load("glm-5");
  const ParallelLayout ep64{.tp = 1, .dp = 64, .ep = 64};
  const WeightFootprint fp8 = weight_footprint_per_gpu(m, ep64, weight_dtypes_from_name("fp8"));
  const WeightFootprint fp4 = weight_footprint_per_gpu(m, ep64, weight_dtypes_from_name("nvfp4"));
  // Per GPU under EP64: 4 experts x 75 MoE layers x 3 x 6144 x 2048 = 11,324,620,800 routed weights.
  // FP8 1 B each: 11,324,620,800 B; NVFP4 9/16 B each: 6,370,099,200 B; 7/16 of the FP8 bytes saved,
  // 4,954,521,600 B (4.95 GB).
  EXPECT_EQ(fp8.routed_expert_bytes, 11'324'620'800u);
  EXPECT_EQ(fp4.routed_expert_bytes, 6'370'099'200u);
  EXPECT_EQ(fp4.attention_bytes, 2 * fp8.attention_bytes) << "attention in BF16";
  EXPECT_EQ(fp4.dense_ffn_bytes * 16, fp8.dense_ffn_bytes * 9) << "dense FFN in NVFP4";
  // Shared experts in NVFP4; the routers stay BF16: 75 x 256 x 6144 x 2 B = 235,929,600 B in both.
  const std::uint64_t routers = 235'929'600;
  EXPECT_EQ((fp4.shared_expert_bytes - routers) * 16, (fp8.shared_expert_bytes - routers) * 9);
}

class Nvfp4Pricing : public ::testing::Test {
 protected:
  ModelProfile model = load("glm-5");
  LayerKernels fp8{model, 1, weight_dtypes_from_name("fp8"), DType::fp8};
  LayerKernels fp4{model, 1, weight_dtypes_from_name("nvfp4"), DType::fp8};
  fakegpu::DeviceProfile gb300 = fakegpu::load_device_profile_named("gb300");
  fakegpu::CostModel cost{gb300, 0};

  // The routed experts of one MoE layer on a rank holding 4 experts.
  hal::KernelDesc experts(const LayerKernels& lk, std::int64_t expert_tokens) const {
    std::vector<hal::KernelDesc> out;
    lk.routed_experts(expert_tokens, 4, std::nullopt, out);
    return out.at(0);
  }
};

TEST_F(Nvfp4Pricing, ALargeBatchRunsAtTheFp4Peak) {
  const hal::KernelDesc a = experts(fp8, 65'536);
  const hal::KernelDesc b = experts(fp4, 65'536);
  EXPECT_EQ(b.dtype, DType::fp4);
  EXPECT_EQ(a.flops, b.flops);
  // 6 x 65,536 x 6144 x 2048 = 4.948 TFLOP. GB300 at 78.3% of peak, 8e9 FLOP of fill:
  //   FP8 (4.948e12 + 8e9) / (5e15 x 0.783) = 1,265.8 us, compute-bound (its 2.57 GB take 402 us);
  //   FP4 (4.948e12 + 8e9) / (15e15 x 0.783) = 422.0 us, still compute-bound (2.50 GB: 392 us).
  // With the 3 us launch: 425.0 / 1,268.8 = 0.335, the 1/3 of the FP4 peak over the FP8 one.
  const double ta = static_cast<double>(cost.kernel_time(a).ns());
  const double tb = static_cast<double>(cost.kernel_time(b).ns());
  EXPECT_NEAR(ta, 1'268'800, 1'000);
  EXPECT_NEAR(tb, 425'000, 1'000);
  EXPECT_NEAR(tb / ta, 0.335, 0.002);
}

TEST_F(Nvfp4Pricing, ASmallBatchReadsFewerBytes) {
  const hal::KernelDesc a = experts(fp8, 64);
  const hal::KernelDesc b = experts(fp4, 64);
  // Weights 4 x 3 x 6144 x 2048 = 150,994,944 (FP8 bytes; NVFP4 x 9/16 = 84,934,656) plus the
  // activations 64 x (2 x 6144 + 3 x 2048) x 2 B = 2,359,296: 153,354,240 vs 87,293,952 B (0.569).
  EXPECT_EQ(a.bytes, 153'354'240u);
  EXPECT_EQ(b.bytes, 87'293'952u);
  // Memory-bound at 6.4 TB/s (80% of 8 TB/s), 8 MB of fill: FP8 25.21 us, NVFP4 14.89 us; + 3 us launch
  // each: 17.89 / 28.21 = 0.634.
  const double ta = static_cast<double>(cost.kernel_time(a).ns());
  const double tb = static_cast<double>(cost.kernel_time(b).ns());
  EXPECT_NEAR(tb / ta, 0.634, 0.002);
}

TEST(WeightDtypes, AGpuWithoutAnFp4PeakIsRefused) {
  const WeightDtypes nvfp4 = weight_dtypes_from_name("nvfp4");
  for (const char* name : {"h100", "h200", "h800"}) {
    const fakegpu::DeviceProfile p = fakegpu::load_device_profile_named(name);
    EXPECT_FALSE(p.has_peak(DType::fp4)) << name;
    hal::DeviceInfo info;
    info.id = 3;
    info.name = p.name;
    info.peak_flops_per_s = p.peak_flops_per_s;
    try {
      check_weight_dtypes(nvfp4, info);
      ADD_FAILURE() << name << " took NVFP4 weights";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("routed experts in fp4"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(p.name), std::string::npos) << e.what();
    }
    EXPECT_NO_THROW(check_weight_dtypes(weight_dtypes_from_name("fp8"), info));
  }
  for (const char* name : {"b200", "gb200", "b300", "gb300"}) {
    const fakegpu::DeviceProfile p = fakegpu::load_device_profile_named(name);
    EXPECT_TRUE(p.has_peak(DType::fp4)) << name;
    hal::DeviceInfo info;
    info.peak_flops_per_s = p.peak_flops_per_s;
    EXPECT_NO_THROW(check_weight_dtypes(nvfp4, info)) << name;
  }
}

}  // namespace weight_dtypes_test
}  // namespace nvl::engine
