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
  if (!files.moe.empty()) k.moe = std::make_shared<const MeasuredMoeTable>(MeasuredMoeTable::load(files.moe));
  return k;
}

}  // namespace nvl::fakegpu
