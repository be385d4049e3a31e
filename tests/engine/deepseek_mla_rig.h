#pragma once
// DeepSeek-V3's attention on GB200 under SGLang with attention DP (all 128 heads on the rank), FP8 GEMMs
// and KV: the DEP workers of the GB200 SGLang rows of the measured serving table. Shared by the prefill
// and decode module tests.
#include <vector>

#include "tests/engine/attention_block.h"
#include "tests/engine/module_rig.h"

namespace nvl::engine::test {

struct DeepSeekMlaOnGb200 : ModuleRig {
  DeepSeekMlaOnGb200() : ModuleRig("gb200", "deepseek-v3", 1) {}
  // The block's time (no module includes the input norm), priced with `used`; with `from_table`, every
  // kernel of the block is expected to be priced from a table.
  double block_ns(const std::vector<hal::KernelDesc>& ks, const fakegpu::MeasuredKernels& used,
                  bool from_table) const {
    return test::block_ns(ks, costs(ks, used), from_table);
  }
};

}  // namespace nvl::engine::test
