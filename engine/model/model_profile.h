#pragma once
// A model's architecture, with the field names of its published config.json, and the parameter
// counts that follow from it. Loaded from engine/models/*.json.
#include <cstdint>
#include <filesystem>
#include <string>

namespace nvl::engine {

enum class AttentionKind : std::uint8_t {
  mla,      // multi-head latent attention (DeepSeek-V3)
  mla_dsa,  // MLA with DeepSeek sparse attention: an indexer picks the top-k tokens each query attends to
  gqa,      // grouped-query attention (GLM-4.5)
};

struct ModelProfile {
  std::string name;
  AttentionKind attention = AttentionKind::mla;
  std::int64_t hidden_size = 0;
  std::int64_t num_hidden_layers = 0;
  std::int64_t first_k_dense_replace = 0;  // the first k layers have a dense FFN, the rest MoE
  std::int64_t vocab_size = 0;
  // The longest sequence (prompt and output) the model serves: vLLM's max_model_len defaults to it.
  std::int64_t max_position_embeddings = 0;
  std::int64_t num_attention_heads = 0;
  // MLA
  std::int64_t q_lora_rank = 0;
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  // DSA indexer
  std::int64_t index_n_heads = 0;
  std::int64_t index_head_dim = 0;
  std::int64_t index_topk = 0;
  std::int64_t index_key_scale_bytes = 0;
  // IndexShare (GLM-5.2): layers [0, index_skip_topk_offset) and then one in every index_topk_freq
  // hold a full indexer; each other layer reuses the top-k of the last one that does, and holds no
  // indexer weights, runs no indexer kernels and keeps no indexer keys. 1: every layer holds one.
  std::int64_t index_topk_freq = 1;
  std::int64_t index_skip_topk_offset = 0;
  // GQA
  std::int64_t num_key_value_heads = 0;
  std::int64_t head_dim = 0;
  // MoE and dense FFN
  std::int64_t n_routed_experts = 0;
  std::int64_t n_shared_experts = 0;
  std::int64_t num_experts_per_tok = 0;
  std::int64_t moe_intermediate_size = 0;
  std::int64_t intermediate_size = 0;
  // MTP (each module modelled with a full indexer under DSA, IndexShare or not)
  std::int64_t num_nextn_predict_layers = 0;
  double mtp_acceptance_rate = 0;  // 0 (and not in the file) without MTP modules
  // Published totals, to check the counts below against.
  double published_params_total = 0;
  double published_params_active = 0;

  std::int64_t moe_layers() const { return num_hidden_layers - first_k_dense_replace; }
  bool is_mla() const { return attention != AttentionKind::gqa; }
  // Main layers in [first, end) that hold an indexer of their own; 0 without DSA.
  std::int64_t indexer_layers(std::int64_t first, std::int64_t end) const;
  // Main layers in [first, end) that reuse an earlier layer's top-k (IndexShare); 0 without DSA.
  std::int64_t index_share_layers(std::int64_t first, std::int64_t end) const;

  // Parameter counts (elements, not bytes).
  std::int64_t attention_params_per_layer() const;  // projections, without the DSA indexer
  std::int64_t indexer_params_per_layer() const;    // a layer that holds one; 0 unless mla_dsa
  std::int64_t all_layers_attention_params() const; // projections and indexers of every main layer
  std::int64_t expert_params() const;               // one routed expert (gate, up, down)
  std::int64_t shared_expert_params() const;        // all shared experts of one layer
  std::int64_t dense_ffn_params() const;            // one dense layer's FFN
  std::int64_t router_params() const;               // one MoE layer's gate
  std::int64_t embedding_params() const;            // the input embedding table
  std::int64_t lm_head_params() const;              // the output projection (untied)
  std::int64_t mtp_extra_params() const;            // an MTP module beyond its decoder layer: eh_proj
  std::int64_t total_params() const;                // main model, without MTP modules (as published)
  // What one token touches: everything but the embedding table (a lookup) and the unused experts.
  std::int64_t active_params() const;
};

// Reads and checks a model profile; any problem is an InputError naming the file and key.
ModelProfile load_model_profile(const std::filesystem::path& file);
// <models>/<name>.json, e.g. "glm-5", where <models> is an installed binary's share/nvl72emu/engine/models,
// else engine/models under the source tree (NVL_SOURCE_DIR; rt::data_dir).
std::filesystem::path model_profile_path(const std::string& name);

}  // namespace nvl::engine
