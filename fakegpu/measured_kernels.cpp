#include "fakegpu/measured_kernels.h"

namespace nvl::fakegpu {

MeasuredKernels MeasuredKernels::load(const MeasuredKernelFiles& files) {
  MeasuredKernels k;
  if (!files.gemm.empty()) k.gemm = std::make_shared<const MeasuredGemmTable>(MeasuredGemmTable::load(files.gemm));
  if (!files.mla_decode.empty()) {
    k.mla_decode = std::make_shared<const MeasuredMlaDecodeTable>(MeasuredMlaDecodeTable::load(files.mla_decode));
  }
  const auto module = [](const std::filesystem::path& file, ModulePhase phase) {
    return file.empty() ? nullptr
                        : std::make_shared<const MeasuredAttentionModuleTable>(
                              MeasuredAttentionModuleTable::load(file, phase));
  };
  k.dsa_decode = module(files.dsa_decode, ModulePhase::decode);
  k.dsa_context = module(files.dsa_context, ModulePhase::context);
  k.mla_context = module(files.mla_context, ModulePhase::context);
  k.mla_decode_module = module(files.mla_decode_module, ModulePhase::decode);
  const auto moe = [](const std::filesystem::path& file) {
    return file.empty() ? nullptr : std::make_shared<const MeasuredMoeTable>(MeasuredMoeTable::load(file));
  };
  k.moe = moe(files.moe);
  k.moe_deepep_low_latency = moe(files.moe_deepep_low_latency);
  k.moe_deepep_normal = moe(files.moe_deepep_normal);
  return k;
}

}  // namespace nvl::fakegpu
