#include "fakegpu/measured_dsa_decode_table.h"

namespace nvl::fakegpu {

MeasuredDsaDecodeTable MeasuredDsaDecodeTable::load(const std::filesystem::path& file) {
  MeasuredDsaDecodeTable t;
  t.grid_ = MeasuredGridTable::load(file, "the measured DSA decode module table",
                                    "gemm_dtype,kv_dtype,heads,batch,kv_len,latency_us", 2);
  return t;
}

}  // namespace nvl::fakegpu
