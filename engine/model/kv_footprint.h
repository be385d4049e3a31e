#pragma once
// KV-cache bytes per token: MLA keeps one latent (kv_lora + rope) per token and layer; DSA adds the
// indexer's key (FP8 plus a scale) in every layer that holds an indexer; GQA keeps K and V per KV head.
#include <cstdint>

#include "engine/hal/types.h"
#include "engine/model/model_profile.h"

namespace nvl::engine {

struct KvBytesPerToken {
  std::uint64_t attention_per_layer = 0;  // MLA latent or GQA K+V
  std::uint64_t indexer_per_layer = 0;    // DSA indexer key, in a layer that holds an indexer (0 without DSA)
  std::int64_t layers = 0;                // layers that keep KV
  std::int64_t indexer_layers = 0;        // of those, the ones that keep indexer keys (IndexShare: fewer)

  std::uint64_t total() const {
    return attention_per_layer * static_cast<std::uint64_t>(layers) +
           indexer_per_layer * static_cast<std::uint64_t>(indexer_layers);
  }
};

// `with_mtp`: count the MTP modules' layers too (they keep KV of their own).
KvBytesPerToken kv_bytes_per_token(const ModelProfile& m, hal::DType kv_dtype, bool with_mtp = false);
// Main layers [first_layer, end_layer) only: what a prefill has written once those layers ran.
KvBytesPerToken kv_bytes_per_token_of_layers(const ModelProfile& m, hal::DType kv_dtype, std::int64_t first_layer,
                                             std::int64_t end_layer);

}  // namespace nvl::engine
