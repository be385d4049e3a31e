#include "fakegpu/measured_kernels.h"

namespace nvl::fakegpu {

MeasuredKernels MeasuredKernels::load(const MeasuredKernelFiles& files) {
  MeasuredKernels k;
  if (!files.gemm.empty()) k.gemm = std::make_shared<const MeasuredGemmTable>(MeasuredGemmTable::load(files.gemm));
  if (!files.mla_decode.empty()) {
    k.mla_decode = std::make_shared<const MeasuredMlaDecodeTable>(MeasuredMlaDecodeTable::load(files.mla_decode));
  }
  return k;
}

}  // namespace nvl::fakegpu
