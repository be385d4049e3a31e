#include "engine/model/kv_footprint.h"

namespace nvl::engine {

KvBytesPerToken kv_bytes_per_token_of_layers(const ModelProfile& m, hal::DType kv_dtype, std::int64_t first_layer,
                                             std::int64_t end_layer) {
  KvBytesPerToken kv;
  const std::uint64_t bits = static_cast<std::uint64_t>(hal::bits_of(kv_dtype));
  if (m.is_mla()) {
    kv.attention_per_layer = static_cast<std::uint64_t>(m.kv_lora_rank + m.qk_rope_head_dim) * bits / 8;
  } else {
    kv.attention_per_layer = static_cast<std::uint64_t>(2 * m.num_key_value_heads * m.head_dim) * bits / 8;
  }
  if (m.attention == AttentionKind::mla_dsa) {
    // The indexer's keys are FP8 whatever the KV dtype, with one scale per token.
    kv.indexer_per_layer = static_cast<std::uint64_t>(m.index_head_dim + m.index_key_scale_bytes);
  }
  kv.layers = end_layer - first_layer;
  kv.indexer_layers = m.indexer_layers(first_layer, end_layer);
  return kv;
}

KvBytesPerToken kv_bytes_per_token(const ModelProfile& m, hal::DType kv_dtype, bool with_mtp) {
  KvBytesPerToken kv = kv_bytes_per_token_of_layers(m, kv_dtype, 0, m.num_hidden_layers);
  if (with_mtp) {
    kv.layers += m.num_nextn_predict_layers;
    if (m.attention == AttentionKind::mla_dsa) kv.indexer_layers += m.num_nextn_predict_layers;
  }
  return kv;
}

}  // namespace nvl::engine
