#pragma once
// Pricing of kernels for one device profile. The roofline:
//   t = overhead + max((flops + half_flops) / (peak(dtype) * eff_compute(kind, dtype)),
//                      (bytes + half_bytes) / (hbm_bw * eff_memory(kind)))
// which is the roofline with the saturating efficiency curve of efficiency_table.h. Rates are
// folded into ns-per-unit factors at construction so that pricing is a few multiply-adds.
// With a kernel library's measured tables in use, a GEMM of a dtype the GEMM table holds, and an MLA
// decode attention of a KV dtype and head count the MLA table holds, cost what the table says for their
// shape (MeasuredGemmTable, MeasuredMlaDecodeTable), their compute and memory parts scaled together to
// that time so that SM shares and throttles still apply as they would to the roofline's; so does a fused
// MoE op (FusedMoeShape) the MoE table of its feed holds (MeasuredMoeTable: routed on the GPU itself, or
// behind DeepEP's low-latency or normal dispatch). In a list of
// kernels, a DSA decode or prefill attention block, or a dense MLA prefill or decode block, that the
// attention-module tables hold costs what the table says for the whole block (find_dsa_module,
// find_mla_module), its kernels scaled together to that time.
#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "emu/rt/time.h"
#include "engine/hal/kernel.h"
#include "fakegpu/device_profile.h"
#include "fakegpu/dsa_module.h"
#include "fakegpu/mla_module.h"
#include "fakegpu/kernel_cost.h"
#include "fakegpu/measured_kernels.h"

namespace nvl::fakegpu {

class CostModel {
 public:
  CostModel(const DeviceProfile& profile, hal::DeviceId device);

  // Throws HalError when the device has no peak for the kernel's dtype (e.g. FP4 on Hopper).
  KernelCost cost(const hal::KernelDesc& k, rt::Duration overhead) const;
  // The costs of a list's kernels (a graph's KernelsNode), appended to `out` in order: each as cost()
  // prices it, but for a measured DSA attention module. Throws as cost() does.
  void cost_list(std::span<const hal::KernelDesc> kernels, rt::Duration overhead, std::vector<KernelCost>& out) const;
  // A kernel launched on its own, with the whole device at nominal clock.
  rt::Duration kernel_time(const hal::KernelDesc& k) const;
  // From now on kernels are priced from `tables` where they hold their shape (empty: the roofline only).
  void use_measured_kernels(const MeasuredKernels& tables) { measured_ = tables; }

 private:
  struct ComputeRate {
    double ns_per_flop = 0;  // 0: the dtype is not supported
    double half_flops = 0;
  };
  struct MemoryRate {
    double ns_per_byte = 0;
    double half_bytes = 0;
  };

  // The measured time of a kernel the tables hold, else none.
  std::optional<double> measured_ns(const hal::KernelDesc& k) const;
  // The MoE table of ops fed as `feed` says; null: none.
  const MeasuredMoeTable* moe_table(hal::MoeFeed feed) const;
  // Rooflines at the device's peak rates, without efficiencies: what measured utilisation is of.
  double gemm_roofline_ns(hal::DType dtype, std::int64_t m, std::int64_t n, std::int64_t k) const;
  // `batch` sequences of `queries` queries each attending `kv_len` keys of the latent KV (DeepSeek-V3's
  // MLA geometry, as the measured table's) with `heads` heads.
  double mla_decode_roofline_ns(hal::DType kv_dtype, std::int64_t heads, double batch, double queries,
                                double kv_len) const;

  // A fused MoE op of `tokens` (FusedMoeShape): the experts its tokens choose read once, balanced.
  double fused_moe_roofline_ns(hal::DType dtype, std::int64_t hidden, const hal::FusedMoeShape& op,
                               double tokens) const;
  // GLM-5's attention block (the DSA module tables' geometry) for `batch` sequences of `queries` new
  // tokens after `prefix` cached ones (decode: one query after kv_len - 1): projection weights read once,
  // the indexer scoring every earlier key of each query, the attention over at most the top-k.
  double dsa_roofline_ns(hal::DType gemm_dtype, hal::DType kv_dtype, std::int64_t heads, double batch, double queries,
                         double prefix) const;
  // DeepSeek-V3's dense MLA prefill block (the MLA module tables' geometry) for `batch` sequences of
  // `queries` new tokens after `prefix` cached ones: projection weights read once, kv_b expanding every
  // key's latent, causal MHA-form attention over 192-wide keys and 128-wide values.
  double mla_prefill_roofline_ns(hal::DType gemm_dtype, std::int64_t heads, double batch, double queries,
                                 double prefix) const;
  // DeepSeek-V3's weight-absorbed MLA decode block (the MLA decode module tables' geometry) for `batch`
  // sequences of one query attending `kv_len` keys: projection weights read once, each sequence's latent
  // keys read once, the attention over the 576-wide latent.
  double mla_decode_block_roofline_ns(hal::DType gemm_dtype, hal::DType kv_dtype, std::int64_t heads, double batch,
                                      double kv_len) const;
  // The measured time of the attention block `kernels` hold (find_dsa_module, find_mla_module), else none.
  std::optional<double> attention_module_ns(std::span<const hal::KernelDesc> kernels) const;
  // DeepSeek-V3's decode block `block`, which `kernels` hold, from the MLA decode module table, else none.
  std::optional<double> mla_decode_module_ns(std::span<const hal::KernelDesc> kernels,
                                             const AttentionModule& block) const;
  // The attention kernel `k` (dense decode) priced as cost() prices it, its sequences holding `length`
  // keys each instead of theirs.
  double attention_at_length_ns(const hal::KernelDesc& k, double length) const;
  // The roofline time of a block of `batch` sequences of `length` (see AttentionModule) after `prefix`.
  using ModuleRoofline = std::function<double(double batch, double length, double prefix)>;
  // `block`'s time from `table` (null: none), else none.
  std::optional<double> module_ns(const MeasuredAttentionModuleTable* table, const AttentionModule& block,
                                  const ModuleRoofline& roofline) const;

  hal::DeviceId device_;
  std::array<double, hal::kDTypeCount> peak_flops_per_s_{};
  double hbm_bytes_per_s_ = 0;
  MeasuredKernels measured_;
  std::string device_name_;
  rt::Duration kernel_launch_;
  std::array<std::array<ComputeRate, hal::kDTypeCount>, hal::kKernelKindCount> compute_{};
  std::array<MemoryRate, hal::kKernelKindCount> memory_{};
};

}  // namespace nvl::fakegpu
