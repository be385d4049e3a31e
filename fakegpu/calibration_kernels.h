#pragma once
// The kernels of the published measurements the device model is calibrated to (REFERENCE.md §1.3),
// and a way to time one alone on a fresh emulated device. Shared by `nvl72emu validate` and the
// calibration tests; the published figures themselves live with those, not here.
#include <cstdint>

#include "emu/rt/time.h"
#include "engine/hal/kernel.h"
#include "fakegpu/device_profile.h"
#include "fakegpu/host_profile.h"

namespace nvl::fakegpu {

// FP8 GEMM, M = N = K = n (DeepGEMM): FP8 operands, BF16 output.
hal::KernelDesc square_fp8_gemm(std::uint64_t n);

// FlashMLA decode over an MLA KV cache (DeepSeek shape: one latent KV head of 576 = 512 + 64 rope,
// values of 512), BF16 cache, one query token per sequence. Few heads make it memory-bound.
hal::KernelDesc mla_decode_attention(std::uint64_t batch, std::uint64_t kv_tokens, std::uint64_t heads);

// Dense causal prefill attention, forward, BF16 (MLA prefill head dims: QK 192, V 128).
hal::KernelDesc dense_prefill_attention(std::uint64_t batch, std::uint64_t tokens, std::uint64_t heads);

// Launches `kernel` on stream 0 of a one-GPU fleet on a fresh VirtualRuntime and returns the
// simulated time from launch to completion (launch overhead included). Call it while no other
// runtime lives on this thread (emu/rt allows one at a time).
rt::Duration time_kernel_alone(const DeviceProfile& device, const HostProfile& host, const hal::KernelDesc& kernel);

}  // namespace nvl::fakegpu
