#include "fakegpu/measured_kernels.h"

namespace nvl::fakegpu {

MeasuredKernels MeasuredKernels::load(const MeasuredKernelFiles& files) {
  MeasuredKernels k;
  if (!files.gemm.empty()) k.gemm = std::make_shared<const MeasuredGemmTable>(MeasuredGemmTable::load(files.gemm));
  if (!files.mla_decode.empty()) {
    k.mla_decode = std::make_shared<const MeasuredMlaDecodeTable>(MeasuredMlaDecodeTable::load(files.mla_decode));
  }
  if (!files.dsa_decode.empty()) {
    k.dsa_decode = std::make_shared<const MeasuredDsaModuleTable>(
        MeasuredDsaModuleTable::load(files.dsa_decode, DsaPhase::decode));
  }
  if (!files.dsa_context.empty()) {
    k.dsa_context = std::make_shared<const MeasuredDsaModuleTable>(
        MeasuredDsaModuleTable::load(files.dsa_context, DsaPhase::context));
  }
  const auto moe = [](const std::filesystem::path& file) {
    return file.empty() ? nullptr : std::make_shared<const MeasuredMoeTable>(MeasuredMoeTable::load(file));
  };
  k.moe = moe(files.moe);
  k.moe_deepep_low_latency = moe(files.moe_deepep_low_latency);
  k.moe_deepep_normal = moe(files.moe_deepep_normal);
  return k;
}

}  // namespace nvl::fakegpu
