#pragma once
// The measured tables of one kernel library on one GPU, loaded once and shared by its devices' cost models.
#include <filesystem>
#include <memory>

#include "fakegpu/measured_attention_module_table.h"
#include "fakegpu/measured_gemm_table.h"
#include "fakegpu/measured_mla_decode_table.h"
#include "fakegpu/measured_moe_table.h"

namespace nvl::fakegpu {

// Where a library's tables are (a device profile's measured_kernels.<library>); an empty path: none.
struct MeasuredKernelFiles {
  std::filesystem::path gemm;
  std::filesystem::path mla_decode;
  std::filesystem::path dsa_decode;
  std::filesystem::path dsa_context;
  std::filesystem::path mla_context;
  std::filesystem::path mla_decode_module;
  std::filesystem::path moe;
  std::filesystem::path moe_deepep_low_latency;
  std::filesystem::path moe_deepep_normal;
};

struct MeasuredKernels {
  std::shared_ptr<const MeasuredGemmTable> gemm;              // null: GEMMs on the roofline
  std::shared_ptr<const MeasuredMlaDecodeTable> mla_decode;  // null: MLA decode attention on the roofline
  std::shared_ptr<const MeasuredAttentionModuleTable> dsa_decode;   // null: DSA decode attention kernel by kernel
  std::shared_ptr<const MeasuredAttentionModuleTable> dsa_context;  // null: DSA prefill attention kernel by kernel
  std::shared_ptr<const MeasuredAttentionModuleTable> mla_context;  // null: MLA prefill attention kernel by kernel
  std::shared_ptr<const MeasuredAttentionModuleTable> mla_decode_module;  // null: MLA decode attention by kernel
  std::shared_ptr<const MeasuredMoeTable> moe;               // null: routed experts on the roofline
  // The experts behind DeepEP's dispatch, in its two modes (same columns; tokens are the EP group's).
  std::shared_ptr<const MeasuredMoeTable> moe_deepep_low_latency;  // null: those experts on the roofline
  std::shared_ptr<const MeasuredMoeTable> moe_deepep_normal;       // null: likewise

  // Throws rt::InputError for a table file that does not load.
  static MeasuredKernels load(const MeasuredKernelFiles& files);
};

}  // namespace nvl::fakegpu
