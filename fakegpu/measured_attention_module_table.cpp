#include "fakegpu/measured_attention_module_table.h"

namespace nvl::fakegpu {

MeasuredAttentionModuleTable MeasuredAttentionModuleTable::load(const std::filesystem::path& file, ModulePhase phase) {
  MeasuredAttentionModuleTable t;
  t.grid_ = phase == ModulePhase::decode
                ? MeasuredGridTable::load(file, "the measured attention-module decode table",
                                          "gemm_dtype,kv_dtype,heads,batch,kv_len,latency_us", 2)
                : MeasuredGridTable::load(file, "the measured attention-module prefill table",
                                          "gemm_dtype,kv_dtype,heads,batch,isl,latency_us", 2);
  return t;
}

}  // namespace nvl::fakegpu
