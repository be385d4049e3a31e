#pragma once
// GLM-5's attention on B200 under SGLang at TP8 (8 local heads), FP8 GEMMs and KV, the validate rows'
// deployment: the engine's kernel list for a batch, its costs with or without the DSA module tables, and
// the tables' own rows. Shared by the decode and prefill module tests.
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/exec/layer_kernels.h"
#include "fakegpu/cost_model.h"
#include "fakegpu/profile_library.h"

namespace nvl::engine::test {

struct Glm5DsaOnB200 {
  fakegpu::DeviceProfile profile = fakegpu::load_device_profile_named("b200");
  ModelProfile model = load_model_profile(model_profile_path("glm-5"));
  LayerKernels kernels{model, 8, WeightDtypes{}, hal::DType::fp8};
  fakegpu::MeasuredKernels tables = fakegpu::MeasuredKernels::load(profile.measured_kernels.at("sglang"));

  std::vector<hal::KernelDesc> attention(const RankBatch& batch) const {
    std::vector<hal::KernelDesc> out;
    kernels.attention(batch, false, out);
    return out;
  }
  // Each kernel's cost, with the DSA module tables in use or without them (the GEMM table's still).
  std::vector<fakegpu::KernelCost> costs(const std::vector<hal::KernelDesc>& ks, bool module_tables) const {
    fakegpu::CostModel pricing(profile, 0);
    fakegpu::MeasuredKernels used = tables;
    if (!module_tables) used.dsa_decode = used.dsa_context = nullptr;
    pricing.use_measured_kernels(used);
    std::vector<fakegpu::KernelCost> out;
    pricing.cost_list(ks, profile.graph_node, out);
    return out;
  }
  // A table's own row (microseconds) for FP8 GEMMs and KV, 8 heads: `phase` "decode" or "context".
  static double table_us(const std::string& phase, std::int64_t batch, std::int64_t length) {
    std::ifstream in(fakegpu::default_profile_dir() / ("measured/b200/dsa_" + phase + "_sglang.csv"));
    const std::string key = "fp8,fp8,8," + std::to_string(batch) + "," + std::to_string(length) + ",";
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind(key, 0) == 0) return std::stod(line.substr(key.size()));
    }
    ADD_FAILURE() << "no row " << key;
    return 0;
  }
};

}  // namespace nvl::engine::test
