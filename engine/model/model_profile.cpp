#include "engine/model/model_profile.h"

#include <algorithm>

#include "emu/rt/data_dir.h"
#include "emu/rt/json_reader.h"

namespace nvl::engine {

std::int64_t ModelProfile::attention_params_per_layer() const {
  const std::int64_t h = hidden_size;
  if (!is_mla()) {
    const std::int64_t q = h * num_attention_heads * head_dim;
    const std::int64_t kv = 2 * h * num_key_value_heads * head_dim;
    const std::int64_t o = num_attention_heads * head_dim * h;
    return q + kv + o;
  }
  const std::int64_t qk_head = qk_nope_head_dim + qk_rope_head_dim;
  const std::int64_t q = h * q_lora_rank + q_lora_rank * num_attention_heads * qk_head;
  const std::int64_t kv_a = h * (kv_lora_rank + qk_rope_head_dim);
  const std::int64_t kv_b = kv_lora_rank * num_attention_heads * (qk_nope_head_dim + v_head_dim);
  const std::int64_t o = num_attention_heads * v_head_dim * h;
  return q + kv_a + kv_b + o;
}

std::int64_t ModelProfile::indexer_params_per_layer() const {
  if (attention != AttentionKind::mla_dsa) return 0;
  // Query from the q latent, one key head from the hidden state, and per-head weights.
  return q_lora_rank * index_n_heads * index_head_dim + hidden_size * index_head_dim + hidden_size * index_n_heads;
}

std::int64_t ModelProfile::indexer_layers(std::int64_t first, std::int64_t end) const {
  if (attention != AttentionKind::mla_dsa || end <= first) return 0;
  // Layers below `x` that hold one: all below the offset, then the last of every freq after it.
  const auto below = [this](std::int64_t x) {
    return std::min(x, index_skip_topk_offset) + std::max<std::int64_t>(0, x - index_skip_topk_offset) / index_topk_freq;
  };
  return below(end) - below(first);
}

std::int64_t ModelProfile::index_share_layers(std::int64_t first, std::int64_t end) const {
  if (attention != AttentionKind::mla_dsa || end <= first) return 0;
  return end - first - indexer_layers(first, end);
}

std::int64_t ModelProfile::expert_params() const { return 3 * hidden_size * moe_intermediate_size; }
std::int64_t ModelProfile::shared_expert_params() const { return n_shared_experts * expert_params(); }
std::int64_t ModelProfile::dense_ffn_params() const { return 3 * hidden_size * intermediate_size; }
std::int64_t ModelProfile::router_params() const { return hidden_size * n_routed_experts; }
std::int64_t ModelProfile::embedding_params() const { return vocab_size * hidden_size; }
std::int64_t ModelProfile::lm_head_params() const { return vocab_size * hidden_size; }
std::int64_t ModelProfile::mtp_extra_params() const { return 2 * hidden_size * hidden_size; }

std::int64_t ModelProfile::all_layers_attention_params() const {
  return num_hidden_layers * attention_params_per_layer() +
         indexer_layers(0, num_hidden_layers) * indexer_params_per_layer();
}

std::int64_t ModelProfile::total_params() const {
  const std::int64_t moe = moe_layers() * (n_routed_experts * expert_params() + shared_expert_params() + router_params());
  return all_layers_attention_params() + moe + first_k_dense_replace * dense_ffn_params() +
         embedding_params() + lm_head_params();
}

std::int64_t ModelProfile::active_params() const {
  const std::int64_t moe =
      moe_layers() * (num_experts_per_tok * expert_params() + shared_expert_params() + router_params());
  return all_layers_attention_params() + moe + first_k_dense_replace * dense_ffn_params() +
         lm_head_params();
}

namespace {

// Upper bounds on model dimensions: far above any published model, low enough that FLOP and byte
// counts (products of a few dimensions and token counts) stay inside 64-bit integers.
constexpr std::int64_t kMaxDim = 1 << 20;

AttentionKind attention_kind(rt::JsonReader& r) {
  const std::string s = r.string("attention");
  if (s == "mla") return AttentionKind::mla;
  if (s == "mla_dsa") return AttentionKind::mla_dsa;
  if (s == "gqa") return AttentionKind::gqa;
  r.fail("attention", "expected \"mla\", \"mla_dsa\" or \"gqa\", got \"" + s + "\"");
}

}  // namespace

ModelProfile load_model_profile(const std::filesystem::path& file) {
  const nlohmann::json j = rt::JsonReader::parse_file(file);
  rt::JsonReader r(j, file.string());
  ModelProfile m;
  m.name = r.string("name");
  if (r.string("source").empty()) r.fail("source", "expected a non-empty string naming the config.json");
  m.attention = attention_kind(r);
  m.hidden_size = r.integer("hidden_size", 1, kMaxDim);
  m.num_hidden_layers = r.integer("num_hidden_layers", 1, 4096);
  m.first_k_dense_replace = r.integer("first_k_dense_replace", 0, m.num_hidden_layers);
  m.vocab_size = r.integer("vocab_size", 1, 1 << 24);
  m.max_position_embeddings = r.integer("max_position_embeddings", 1, std::int64_t{1} << 40);
  m.num_attention_heads = r.integer("num_attention_heads", 1, 4096);
  if (m.is_mla()) {
    m.q_lora_rank = r.integer("q_lora_rank", 1, kMaxDim);
    m.kv_lora_rank = r.integer("kv_lora_rank", 1, kMaxDim);
    m.qk_rope_head_dim = r.integer("qk_rope_head_dim", 1, 4096);
    m.qk_nope_head_dim = r.integer("qk_nope_head_dim", 1, 4096);
    m.v_head_dim = r.integer("v_head_dim", 1, 4096);
  } else {
    m.num_key_value_heads = r.integer("num_key_value_heads", 1, m.num_attention_heads);
    m.head_dim = r.integer("head_dim", 1, 4096);
    if (m.num_attention_heads % m.num_key_value_heads != 0) {
      r.fail("num_key_value_heads", "must divide num_attention_heads (" + std::to_string(m.num_attention_heads) + ")");
    }
  }
  if (m.attention == AttentionKind::mla_dsa) {
    m.index_n_heads = r.integer("index_n_heads", 1, 4096);
    m.index_head_dim = r.integer("index_head_dim", 1, 4096);
    m.index_topk = r.integer("index_topk", 1, 1 << 24);
    m.index_key_scale_bytes = static_cast<std::int64_t>(r.sourced("index_key_scale_bytes", rt::NumberRule::non_negative));
    if (r.has("index_topk_freq")) m.index_topk_freq = r.integer("index_topk_freq", 1, m.num_hidden_layers);
    if (m.index_topk_freq > 1 || r.has("index_skip_topk_offset")) {
      // A shared layer reuses an earlier full one, so under IndexShare layer 0 must hold an indexer.
      m.index_skip_topk_offset = r.integer("index_skip_topk_offset", m.index_topk_freq > 1 ? 1 : 0, m.num_hidden_layers);
    }
  }
  m.n_routed_experts = r.integer("n_routed_experts", 1, 1 << 16);
  m.n_shared_experts = r.integer("n_shared_experts", 0, 64);
  m.num_experts_per_tok = r.integer("num_experts_per_tok", 1, m.n_routed_experts);
  m.moe_intermediate_size = r.integer("moe_intermediate_size", 1, kMaxDim);
  m.intermediate_size = r.integer("intermediate_size", 1, kMaxDim);
  m.num_nextn_predict_layers = r.integer("num_nextn_predict_layers", 0, 8);
  if (m.num_nextn_predict_layers > 0) m.mtp_acceptance_rate = r.sourced("mtp_acceptance_rate", rt::NumberRule::fraction);
  m.published_params_total = r.sourced("published_params_total", rt::NumberRule::positive);
  m.published_params_active = r.sourced("published_params_active", rt::NumberRule::positive);
  r.finish();
  return m;
}

std::filesystem::path model_profile_path(const std::string& name) {
  return rt::data_dir("engine/models", std::filesystem::path(NVL_SOURCE_DIR) / "engine" / "models") / (name + ".json");
}

}  // namespace nvl::engine
