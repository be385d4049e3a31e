#include "fakegpu/calibration_kernels.h"

#include "emu/rt/virtual_runtime.h"
#include "fakegpu/gpu_fleet.h"

namespace nvl::fakegpu {

hal::KernelDesc square_fp8_gemm(std::uint64_t n) {
  hal::KernelDesc k;
  k.kind = hal::KernelKind::gemm;
  k.dtype = hal::DType::fp8;
  k.flops = 2 * n * n * n;
  k.bytes = n * n * 1 + n * n * 1 + n * n * 2;  // A, B in FP8; C in BF16
  k.name = "gemm_fp8_" + std::to_string(n);
  return k;
}

hal::KernelDesc mla_decode_attention(std::uint64_t batch, std::uint64_t kv_tokens, std::uint64_t heads) {
  constexpr std::uint64_t kQk = 576;  // kv_lora 512 + rope 64
  constexpr std::uint64_t kV = 512;
  constexpr std::uint64_t kBf16 = 2;
  hal::KernelDesc k;
  k.kind = hal::KernelKind::attn_decode;
  k.dtype = hal::DType::bf16;
  k.flops = 2 * batch * heads * kv_tokens * (kQk + kV);
  k.bytes = batch * kv_tokens * kQk * kBf16 + batch * heads * (kQk + kV) * kBf16;  // the cache, then q and out
  k.name = "mla_decode";
  return k;
}

hal::KernelDesc dense_prefill_attention(std::uint64_t batch, std::uint64_t tokens, std::uint64_t heads) {
  constexpr std::uint64_t kQk = 192;
  constexpr std::uint64_t kV = 128;
  constexpr std::uint64_t kBf16 = 2;
  hal::KernelDesc k;
  k.kind = hal::KernelKind::attn_prefill;
  k.dtype = hal::DType::bf16;
  k.flops = 2 * batch * heads * tokens * tokens * (kQk + kV) / 2;  // causal: half the score matrix
  k.bytes = batch * tokens * heads * (2 * kQk + 2 * kV) * kBf16;  // q, k, v, out
  k.name = "attn_prefill";
  return k;
}

rt::Duration time_kernel_alone(const DeviceProfile& device, const HostProfile& host, const hal::KernelDesc& kernel) {
  rt::VirtualRuntime rt;
  GpuFleet fleet(rt, device, host, 1);
  hal::Stream& stream = fleet.device(0).create_stream("calibration");
  rt::Duration elapsed;
  rt.spawn("calibration", [&] {
    const rt::Time start = rt.now();
    stream.launch(kernel);
    stream.synchronize();
    elapsed = rt.now() - start;
  });
  rt.run();
  return elapsed;
}

}  // namespace nvl::fakegpu
