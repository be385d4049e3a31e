#include "emu/validate/fakegpu_rows.h"

#include "fakegpu/calibration_kernels.h"
#include "fakegpu/profile_library.h"

namespace nvl::emu {

namespace {
struct Device {
  fakegpu::DeviceProfile profile;
  fakegpu::HostProfile host;
};

Device load(const char* name) {
  auto profile = fakegpu::load_device_profile_named(name);
  auto host = fakegpu::load_host_profile_for(profile);
  return {std::move(profile), std::move(host)};
}

double seconds_alone(const Device& d, const hal::KernelDesc& k) {
  return fakegpu::time_kernel_alone(d.profile, d.host, k).seconds();
}
}  // namespace

std::vector<CalibrationRow> fakegpu_calibration_rows() {
  const Device h800 = load("h800");
  const Device b200 = load("b200");
  std::vector<CalibrationRow> rows;

  const auto gemm = fakegpu::square_fp8_gemm(8192);
  rows.push_back({"gemm_fp8_h800", "FP8 GEMM 8192^3 on H800 (DeepGEMM)", "TFLOPS",
                  "REFERENCE.md §1.3: deepseek-ai/DeepGEMM README, up to 1,550 TFLOPS", RowBasis::calibrated, 1550.0,
                  static_cast<double>(gemm.flops) / seconds_alone(h800, gemm) / 1e12, 10.0, std::nullopt, ""});

  const auto decode = fakegpu::mla_decode_attention(128, 4096, 16);
  rows.push_back({"mla_decode_h800", "MLA decode attention on H800, batch 128, 4K KV, 16 heads (FlashMLA)", "GB/s",
                  "REFERENCE.md §1.3: deepseek-ai/FlashMLA README, 3,000 GB/s memory-bound", RowBasis::calibrated, 3000.0,
                  static_cast<double>(decode.bytes) / seconds_alone(h800, decode) / 1e9, 10.0, std::nullopt, ""});

  const auto prefill = fakegpu::dense_prefill_attention(1, 8192, 128);
  rows.push_back({"attn_prefill_b200", "dense causal prefill attention on B200, 8K tokens, 128 heads", "TFLOPS",
                  "REFERENCE.md §1.3: FlashMLA README (SM100 FMHA), 1,460 TFLOPS forward", RowBasis::calibrated, 1460.0,
                  static_cast<double>(prefill.flops) / seconds_alone(b200, prefill) / 1e12, 10.0, std::nullopt, ""});
  return rows;
}

}  // namespace nvl::emu
