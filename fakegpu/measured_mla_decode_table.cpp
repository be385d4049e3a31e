#include "fakegpu/measured_mla_decode_table.h"

namespace nvl::fakegpu {

MeasuredMlaDecodeTable MeasuredMlaDecodeTable::load(const std::filesystem::path& file) {
  MeasuredMlaDecodeTable t;
  t.grid_ = MeasuredGridTable::load(file, "the measured MLA decode table", "kv_dtype,heads,batch,kv_len,latency_us", 1);
  return t;
}

}  // namespace nvl::fakegpu
