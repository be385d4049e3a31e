#include "fakegpu/cost_model.h"

#include <algorithm>
#include <cmath>
#include <variant>

#include "engine/hal/hal_error.h"

namespace nvl::fakegpu {

namespace {

// DeepSeek-V3's MLA: the latent (kv_lora_rank) and the rope part of the key, the measured table's geometry.
constexpr std::int64_t kMlaLatent = 512;
constexpr std::int64_t kMlaRope = 64;
constexpr double kMlaKeyWidth = kMlaLatent + kMlaRope;                // read per cached token
constexpr double kMlaHeadWidth = kMlaLatent + kMlaRope + kMlaLatent;  // per head: q.k, then p.v

}  // namespace

CostModel::CostModel(const DeviceProfile& profile, hal::DeviceId device)
    : device_(device),
      peak_flops_per_s_(profile.peak_flops_per_s),
      hbm_bytes_per_s_(profile.hbm_bytes_per_s),
      device_name_(profile.name),
      kernel_launch_(profile.kernel_launch) {
  for (int k = 0; k < hal::kKernelKindCount; ++k) {
    const KindEfficiency& eff = profile.efficiency.of(static_cast<hal::KernelKind>(k));
    for (int d = 0; d < hal::kDTypeCount; ++d) {
      const double peak = profile.peak_flops_per_s[static_cast<std::size_t>(d)];
      if (peak <= 0) continue;
      compute_[k][d] = {1e9 / (peak * eff.compute_efficiency[static_cast<std::size_t>(d)]), eff.compute_half_flops};
    }
    memory_[k] = {1e9 / (profile.hbm_bytes_per_s * eff.memory_efficiency), eff.memory_half_bytes};
  }
}

KernelCost CostModel::cost(const hal::KernelDesc& k, rt::Duration overhead) const {
  const auto kind = static_cast<std::size_t>(k.kind);
  const ComputeRate& c = compute_[kind][static_cast<std::size_t>(k.dtype)];
  if (c.ns_per_flop <= 0) {
    throw hal::HalError(device_, "launch '" + k.name + "'", hal::Xid::none,
                        std::string(device_name_) + " has no " + std::string(hal::to_string(k.dtype)) +
                            " peak in its profile");
  }
  const MemoryRate& m = memory_[kind];
  KernelCost out;
  // An empty side costs nothing, rather than the curve's fill time.
  out.compute_ns = k.flops > 0 ? (static_cast<double>(k.flops) + c.half_flops) * c.ns_per_flop : 0.0;
  out.memory_ns = k.bytes > 0 ? (static_cast<double>(k.bytes) + m.half_bytes) * m.ns_per_byte : 0.0;
  out.overhead_ns = static_cast<double>(overhead.ns());
  if (const auto measured = measured_ns(k)) {
    const double roofline = std::max(out.compute_ns, out.memory_ns);
    if (roofline > 0) {
      const double scale = *measured / roofline;
      out.compute_ns *= scale;
      out.memory_ns *= scale;
      out.measured = true;
    }
  }
  return out;
}

std::optional<double> CostModel::measured_ns(const hal::KernelDesc& k) const {
  if (measured_.gemm && k.kind == hal::KernelKind::gemm && measured_.gemm->has(k.dtype)) {
    if (const auto* g = std::get_if<hal::GemmShape>(&k.shape)) {
      return measured_.gemm->time_ns(k.dtype, g->m, g->n, g->k, [&](std::int64_t m, std::int64_t n, std::int64_t d) {
        return gemm_roofline_ns(k.dtype, m, n, d);
      });
    }
  }
  if (measured_.mla_decode && k.kind == hal::KernelKind::attn_decode && measured_.mla_decode->has(k.dtype)) {
    const auto* a = std::get_if<hal::AttentionShape>(&k.shape);
    // Dense weight-absorbed MLA in the tables' geometry: one latent KV head of 512 + 64, values of 512.
    if (a == nullptr || a->kv_heads != 1 || a->qk_head_dim != kMlaLatent + kMlaRope || a->v_head_dim != kMlaLatent ||
        a->sparse_topk != 0 || a->seqs <= 0 || a->q_tokens <= 0) {
      return std::nullopt;
    }
    const auto batch = static_cast<double>(a->seqs);
    const double queries = static_cast<double>(a->q_tokens) / batch;  // 1, or 1 + MTP drafts
    const double kv_len = static_cast<double>(a->attended_keys) / static_cast<double>(a->q_tokens);
    const auto one_query = [&](double b, double len) { return mla_decode_roofline_ns(k.dtype, a->heads, b, 1, len); };
    const auto table = measured_.mla_decode->time_ns(k.dtype, a->heads, batch, kv_len, one_query);
    if (!table) return std::nullopt;
    // More queries per sequence (MTP) than the table's one: the measured utilisation carried over.
    return *table * mla_decode_roofline_ns(k.dtype, a->heads, batch, queries, kv_len) / one_query(batch, kv_len);
  }
  return std::nullopt;
}

double CostModel::mla_decode_roofline_ns(hal::DType kv_dtype, std::int64_t heads, double batch, double queries,
                                         double kv_len) const {
  const double q = batch * queries;
  const double flops = 2.0 * q * kv_len * static_cast<double>(heads) * kMlaHeadWidth;
  const double bytes = batch * kv_len * kMlaKeyWidth * hal::bits_of(kv_dtype) / 8 +
                       2.0 * q * static_cast<double>(heads) * kMlaHeadWidth;  // BF16 queries in, outputs out
  return 1e9 * std::max(flops / peak_flops_per_s_[static_cast<std::size_t>(kv_dtype)], bytes / hbm_bytes_per_s_);
}

double CostModel::gemm_roofline_ns(hal::DType dtype, std::int64_t m, std::int64_t n, std::int64_t k) const {
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const double bytes = static_cast<double>(n) * static_cast<double>(k) * hal::bits_of(dtype) / 8 +
                       2.0 * static_cast<double>(m) * static_cast<double>(n + k);  // BF16 activations in and out
  return 1e9 * std::max(flops / peak_flops_per_s_[static_cast<std::size_t>(dtype)], bytes / hbm_bytes_per_s_);
}

rt::Duration CostModel::kernel_time(const hal::KernelDesc& k) const {
  return rt::Duration::nanoseconds(std::llround(price_ns(cost(k, kernel_launch_), RunShares{})));
}

}  // namespace nvl::fakegpu
