#include "fakegpu/measured_dsa_module_table.h"

namespace nvl::fakegpu {

MeasuredDsaModuleTable MeasuredDsaModuleTable::load(const std::filesystem::path& file, DsaPhase phase) {
  MeasuredDsaModuleTable t;
  t.grid_ = phase == DsaPhase::decode
                ? MeasuredGridTable::load(file, "the measured DSA decode module table",
                                          "gemm_dtype,kv_dtype,heads,batch,kv_len,latency_us", 2)
                : MeasuredGridTable::load(file, "the measured DSA prefill module table",
                                          "gemm_dtype,kv_dtype,heads,batch,isl,latency_us", 2);
  return t;
}

}  // namespace nvl::fakegpu
