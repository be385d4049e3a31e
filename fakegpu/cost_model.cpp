#include "fakegpu/cost_model.h"

#include <algorithm>
#include <cmath>
#include <variant>

#include "engine/hal/hal_error.h"

namespace nvl::fakegpu {

namespace {

// DeepSeek-V3's absorbed MLA decode, the measured table's geometry: the latent (kv_lora_rank) and the rope
// part of the key.
constexpr std::int64_t kMlaLatent = deepseek_v3::kLatent;
constexpr std::int64_t kMlaRope = deepseek_v3::kRope;
constexpr double kMlaKeyWidth = kMlaLatent + kMlaRope;                // read per cached token
constexpr double kMlaHeadWidth = kMlaLatent + kMlaRope + kMlaLatent;  // per head: q.k, then p.v

// DeepSeek-V3's attention weights (parameters) at `h` local heads: those every new token passes (the fused
// q_a/kv_a, q_b, o) and kv_b's (in prefill expanding the keys, in decode the absorbed k and v).
struct MlaWeights {
  double per_token = 0;
  double kv_b = 0;
};
MlaWeights mla_weights(double h) {
  using namespace deepseek_v3;
  return {static_cast<double>(kHidden * (kQLora + kLatent + kRope)) + kQLora * h * (kQkNope + kRope) +
              h * kVHead * kHidden,
          kLatent * h * (kQkNope + kVHead)};
}

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
  out.kind = k.kind;
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

void CostModel::cost_list(std::span<const hal::KernelDesc> kernels, rt::Duration overhead,
                          std::vector<KernelCost>& out) const {
  const std::size_t first = out.size();
  for (const hal::KernelDesc& k : kernels) out.push_back(cost(k, overhead));
  const auto table = attention_module_ns(kernels);
  if (!table) return;
  // The table times the block from its first kernel's start to its last one's end, node overheads included.
  double work = 0;
  double overheads = 0;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    if (kernels[i].kind == hal::KernelKind::elementwise) continue;
    const KernelCost& c = out[first + i];
    work += std::max(c.compute_ns, c.memory_ns);
    overheads += c.overhead_ns;
  }
  if (work <= 0) return;
  const double scale = std::max(0.0, *table - overheads) / work;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    if (kernels[i].kind == hal::KernelKind::elementwise) continue;
    KernelCost& c = out[first + i];
    c.compute_ns *= scale;
    c.memory_ns *= scale;
    c.measured = true;
  }
}

std::optional<double> CostModel::measured_ns(const hal::KernelDesc& k) const {
  if (measured_.gemm && k.kind == hal::KernelKind::gemm && measured_.gemm->has(k.dtype)) {
    if (const auto* g = std::get_if<hal::GemmShape>(&k.shape)) {
      return measured_.gemm->time_ns(k.dtype, g->m, g->n, g->k, [&](std::int64_t m, std::int64_t n, std::int64_t d) {
        return gemm_roofline_ns(k.dtype, m, n, d);
      });
    }
  }
  if (k.kind == hal::KernelKind::moe_gemm) {
    const auto* g = std::get_if<hal::GroupedGemmShape>(&k.shape);
    if (g == nullptr || !g->fused) return std::nullopt;
    const MeasuredMoeTable* table = moe_table(g->fused->feed);
    if (table == nullptr || !table->has(k.dtype)) return std::nullopt;
    return table->time_ns(k.dtype, g->hidden, *g->fused, [&](double tokens, std::int64_t ep) {
      hal::FusedMoeShape at = *g->fused;
      at.ep = ep;
      return fused_moe_roofline_ns(k.dtype, g->hidden, at, tokens);
    });
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

const MeasuredMoeTable* CostModel::moe_table(hal::MoeFeed feed) const {
  switch (feed) {
    case hal::MoeFeed::routed_here: return measured_.moe.get();
    case hal::MoeFeed::deepep_low_latency: return measured_.moe_deepep_low_latency.get();
    case hal::MoeFeed::deepep_normal: return measured_.moe_deepep_normal.get();
  }
  return nullptr;
}

double CostModel::mla_decode_roofline_ns(hal::DType kv_dtype, std::int64_t heads, double batch, double queries,
                                         double kv_len) const {
  const double q = batch * queries;
  const double flops = 2.0 * q * kv_len * static_cast<double>(heads) * kMlaHeadWidth;
  const double bytes = batch * kv_len * kMlaKeyWidth * hal::bits_of(kv_dtype) / 8 +
                       2.0 * q * static_cast<double>(heads) * kMlaHeadWidth;  // BF16 queries in, outputs out
  return 1e9 * std::max(flops / peak_flops_per_s_[static_cast<std::size_t>(kv_dtype)], bytes / hbm_bytes_per_s_);
}

double CostModel::fused_moe_roofline_ns(hal::DType dtype, std::int64_t hidden, const hal::FusedMoeShape& op,
                                        double tokens) const {
  const double pairs = tokens * static_cast<double>(op.topk) / static_cast<double>(op.ep);
  const double experts_read = std::min(pairs, static_cast<double>(op.experts) / static_cast<double>(op.ep));
  const double params =
      3.0 * static_cast<double>(hidden) * static_cast<double>(op.expert_inter) / static_cast<double>(op.tp);
  const double flops = 2 * pairs * params;
  // The experts read once; every token's BF16 hidden state in and out.
  const double bytes = experts_read * params * hal::bits_of(dtype) / 8 + tokens * static_cast<double>(hidden) * 4;
  return 1e9 * std::max(flops / peak_flops_per_s_[static_cast<std::size_t>(dtype)], bytes / hbm_bytes_per_s_);
}

std::optional<double> CostModel::attention_module_ns(std::span<const hal::KernelDesc> kernels) const {
  if (measured_.dsa_decode || measured_.dsa_context) {
    if (const auto block = find_dsa_module(kernels)) {
      const bool decode = block->phase == ModulePhase::decode;
      return module_ns(decode ? measured_.dsa_decode.get() : measured_.dsa_context.get(), *block,
                       [&](double batch, double length, double prefix) {
                         return decode ? dsa_roofline_ns(block->gemm_dtype, block->kv_dtype, block->heads, batch, 1,
                                                         length - 1)
                                       : dsa_roofline_ns(block->gemm_dtype, block->kv_dtype, block->heads, batch,
                                                         length, prefix);
                       });
    }
  }
  if (measured_.mla_context || measured_.mla_decode_module) {
    if (const auto block = find_mla_module(kernels)) {
      if (block->phase == ModulePhase::decode) return mla_decode_module_ns(kernels, *block);
      return module_ns(measured_.mla_context.get(), *block, [&](double batch, double length, double prefix) {
        return mla_prefill_roofline_ns(block->gemm_dtype, block->heads, batch, length, prefix);
      });
    }
  }
  return std::nullopt;
}

std::optional<double> CostModel::mla_decode_module_ns(std::span<const hal::KernelDesc> kernels,
                                                      const AttentionModule& block) const {
  const MeasuredAttentionModuleTable* table = measured_.mla_decode_module.get();
  if (table == nullptr) return std::nullopt;
  const auto longest = table->longest_length(block.gemm_dtype, block.kv_dtype, block.heads, block.batch);
  if (!longest) return std::nullopt;
  const auto roofline = [&](double batch, double length, double) {
    return mla_decode_block_roofline_ns(block.gemm_dtype, block.kv_dtype, block.heads, batch, length);
  };
  if (block.length <= *longest) return module_ns(table, block, roofline);
  // Longer than the table measured at this batch (SGLang's rows stop where batch x kv_len reaches ~256K
  // keys): of the block only the attention grows with the keys, so the block costs the module at the
  // longest measured length plus what the attention kernel's own pricing adds for the keys beyond it. (The
  // module's measured utilisation held instead would scale a launch-bound floor with the keys.)
  AttentionModule measured = block;
  measured.length = *longest;
  const auto at_longest = module_ns(table, measured, roofline);
  if (!at_longest) return std::nullopt;
  const auto attention = std::find_if(kernels.begin(), kernels.end(),
                                      [](const hal::KernelDesc& k) { return k.kind == hal::KernelKind::attn_decode; });
  return *at_longest + attention_at_length_ns(*attention, block.length) -
         attention_at_length_ns(*attention, *longest);
}

double CostModel::attention_at_length_ns(const hal::KernelDesc& k, double length) const {
  const auto& a = std::get<hal::AttentionShape>(k.shape);
  const double scale = length * static_cast<double>(a.seqs) / static_cast<double>(a.kv_tokens);
  const auto scaled = [&](auto n) { return static_cast<decltype(n)>(std::llround(static_cast<double>(n) * scale)); };
  hal::KernelDesc at = k;
  auto& s = std::get<hal::AttentionShape>(at.shape);
  s.kv_tokens = scaled(a.kv_tokens);
  s.max_kv = scaled(a.max_kv);
  s.attended_keys = scaled(a.attended_keys);
  // The work and the keys' bytes grow with the keys; the BF16 queries' own bytes stay.
  const auto queries = static_cast<std::uint64_t>(a.q_tokens * a.heads * a.qk_head_dim * 2);
  at.flops = scaled(k.flops);
  at.bytes = k.bytes > queries ? queries + scaled(k.bytes - queries) : k.bytes;
  const KernelCost c = cost(at, rt::Duration{});
  return std::max(c.compute_ns, c.memory_ns);
}

std::optional<double> CostModel::module_ns(const MeasuredAttentionModuleTable* table, const AttentionModule& block,
                                           const ModuleRoofline& roofline) const {
  if (table == nullptr) return std::nullopt;
  const auto ns = table->time_ns(block.gemm_dtype, block.kv_dtype, block.heads, block.batch, block.length,
                                 [&](double batch, double length) { return roofline(batch, length, 0); });
  if (!ns || block.prefix <= 0) return ns;
  // A chunk after a cached prefix (the prefill tables' rows have none): the measured utilisation carried over.
  return *ns * roofline(block.batch, block.length, block.prefix) / roofline(block.batch, block.length, 0);
}

double CostModel::mla_prefill_roofline_ns(hal::DType gemm_dtype, std::int64_t heads, double batch, double queries,
                                          double prefix) const {
  using namespace deepseek_v3;
  const auto h = static_cast<double>(heads);
  const double qk = kQkNope + kRope;
  // Fused q_a/kv_a and q_b over the new tokens, o over them too; kv_b over every key of the sequence.
  const auto [per_token, kv_b] = mla_weights(h);
  const double context = prefix + queries;
  const double attended = queries * prefix + queries * (queries + 1) / 2;  // causal, per sequence
  const auto peak = [&](hal::DType d) { return peak_flops_per_s_[static_cast<std::size_t>(d)]; };
  const double compute_s = 2 * batch * (queries * per_token + context * kv_b) / peak(gemm_dtype) +
                           2 * batch * attended * h * (qk + kVHead) / peak(hal::DType::bf16);
  // Weights once; each sequence's expanded keys and values in BF16.
  const double bytes = (per_token + kv_b) * hal::bits_of(gemm_dtype) / 8 + batch * context * h * (qk + kVHead) * 2;
  return 1e9 * std::max(compute_s, bytes / hbm_bytes_per_s_);
}

double CostModel::mla_decode_block_roofline_ns(hal::DType gemm_dtype, hal::DType kv_dtype, std::int64_t heads,
                                               double batch, double kv_len) const {
  const auto h = static_cast<double>(heads);
  // Fused q_a/kv_a, q_b, o, and the absorbed k and v.
  const MlaWeights w = mla_weights(h);
  const double params = w.per_token + w.kv_b;
  const auto peak = [&](hal::DType d) { return peak_flops_per_s_[static_cast<std::size_t>(d)]; };
  const double compute_s =
      2 * batch * params / peak(gemm_dtype) + 2 * batch * kv_len * h * kMlaHeadWidth / peak(kv_dtype);
  // Weights once; each sequence's latent keys read once.
  const double bytes =
      params * hal::bits_of(gemm_dtype) / 8 + batch * kv_len * kMlaKeyWidth * hal::bits_of(kv_dtype) / 8;
  return 1e9 * std::max(compute_s, bytes / hbm_bytes_per_s_);
}

double CostModel::dsa_roofline_ns(hal::DType gemm_dtype, hal::DType kv_dtype, std::int64_t heads, double batch,
                                  double queries, double prefix) const {
  using namespace glm5;
  const auto h = static_cast<double>(heads);
  const double index_heads = static_cast<double>(kIndexHeads) * h / kHeads;  // split across ranks as the heads are
  // Fused q_a/kv_a, q_b, the indexer's q and k, the absorbed k and v, o.
  const double params = static_cast<double>(kHidden * (kQLora + kLatent + kRope)) + kQLora * h * (kQkNope + kRope) +
                        kQLora * index_heads * kIndexHeadDim + static_cast<double>(kHidden * kIndexHeadDim) +
                        h * kLatent * (kQkNope + kVHead) + h * kVHead * kHidden;
  const auto topk = static_cast<double>(kIndexTopk);
  const double context = prefix + queries;
  // Per sequence: query i (1-based) scores prefix + i keys and attends min(prefix + i, top-k) of them.
  const double scored = queries * prefix + queries * (queries + 1) / 2;
  const double under_topk = std::clamp(topk - prefix, 0.0, queries);
  const double attended = under_topk * prefix + under_topk * (under_topk + 1) / 2 + (queries - under_topk) * topk;
  const auto peak = [&](hal::DType d) { return peak_flops_per_s_[static_cast<std::size_t>(d)]; };
  const double compute_s = 2 * batch * queries * params / peak(gemm_dtype) +
                           2 * batch * scored * index_heads * kIndexHeadDim / peak(hal::DType::fp8) +
                           2 * batch * attended * h * (kLatent + kRope + kLatent) / peak(kv_dtype);
  // FP8 index keys with a 4-byte scale each; each sequence's attended latent keys, each read once.
  const double bytes = params * hal::bits_of(gemm_dtype) / 8 + batch * context * (kIndexHeadDim + 4) +
                       batch * std::min(attended, context) * (kLatent + kRope) * hal::bits_of(kv_dtype) / 8;
  return 1e9 * std::max(compute_s, bytes / hbm_bytes_per_s_);
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
