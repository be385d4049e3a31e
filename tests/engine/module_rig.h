#pragma once
// One model's attention on one GPU under SGLang, FP8 GEMMs and KV, for the attention-module pricing tests:
// the engine's kernel list for a batch, its costs under some of the library's tables, and a module table's
// own rows. glm5_dsa_rig.h and deepseek_mla_rig.h name the deployments.
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/exec/layer_kernels.h"
#include "fakegpu/cost_model.h"
#include "fakegpu/profile_library.h"

namespace nvl::engine::test {

struct ModuleRig {
  // `tp`: the attention TP, which sets the local heads.
  ModuleRig(const std::string& gpu_name, const std::string& model_name, std::int64_t tp)
      : gpu(gpu_name),
        profile(fakegpu::load_device_profile_named(gpu_name)),
        model(load_model_profile(model_profile_path(model_name))),
        kernels(model, tp, WeightDtypes{}, hal::DType::fp8),
        tables(fakegpu::MeasuredKernels::load(profile.measured_kernels.at("sglang"))),
        heads(model.num_attention_heads / tp) {}
  ModuleRig(const ModuleRig&) = delete;  // `kernels` refers to `model`
  ModuleRig& operator=(const ModuleRig&) = delete;

  std::vector<hal::KernelDesc> attention(const RankBatch& batch) const {
    std::vector<hal::KernelDesc> out;
    kernels.attention(batch, false, out);
    return out;
  }
  // Each kernel's cost, priced with `used` (the library's tables, or fewer).
  std::vector<fakegpu::KernelCost> costs(const std::vector<hal::KernelDesc>& ks,
                                         const fakegpu::MeasuredKernels& used) const {
    fakegpu::CostModel pricing(profile, 0);
    pricing.use_measured_kernels(used);
    std::vector<fakegpu::KernelCost> out;
    pricing.cost_list(ks, profile.graph_node, out);
    return out;
  }
  // A module table's own row (microseconds) for FP8 GEMMs and KV at the rig's heads: `table` the file's
  // name before _sglang.csv (dsa_decode, mla_context, ...).
  double table_us(const std::string& table, std::int64_t batch, std::int64_t length) const {
    std::ifstream in(fakegpu::default_profile_dir() / "measured" / gpu / (table + "_sglang.csv"));
    const std::string key =
        "fp8,fp8," + std::to_string(heads) + "," + std::to_string(batch) + "," + std::to_string(length) + ",";
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind(key, 0) == 0) return std::stod(line.substr(key.size()));
    }
    ADD_FAILURE() << "no row " << key;
    return 0;
  }

  std::string gpu;
  fakegpu::DeviceProfile profile;
  ModelProfile model;
  LayerKernels kernels;
  fakegpu::MeasuredKernels tables;
  std::int64_t heads;
};

}  // namespace nvl::engine::test
