#pragma once
// GLM-5's attention on B200 under SGLang at TP8 (8 local heads), FP8 GEMMs and KV, the validate rows'
// deployment, with or without the DSA module tables. Shared by the decode and prefill module tests.
#include <vector>

#include "tests/engine/module_rig.h"

namespace nvl::engine::test {

struct Glm5DsaOnB200 : ModuleRig {
  Glm5DsaOnB200() : ModuleRig("b200", "glm-5", 8) {}
  // Each kernel's cost, with the DSA module tables in use or without them (the GEMM table's still).
  std::vector<fakegpu::KernelCost> costs(const std::vector<hal::KernelDesc>& ks, bool module_tables) const {
    fakegpu::MeasuredKernels used = tables;
    if (!module_tables) used.dsa_decode = used.dsa_context = nullptr;
    return ModuleRig::costs(ks, used);
  }
};

}  // namespace nvl::engine::test
