#pragma once
// How live mode turns a prompt's text into what the engine schedules: a token count and the KV block
// hashes of its full blocks. There is no real tokenizer: a token is taken to be kBytesPerToken bytes
// of UTF-8 text (OpenAI's rule of thumb for English, "about 4 characters per token"), rounded up, at
// least one. Each full block covers block_tokens * kBytesPerToken bytes of the text, and its hash
// chains the previous block's hash with those bytes, so two prompts that share a leading stretch of
// text share their leading block hashes and the second finds them in the prefix cache.
#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/kv/kv_block_pool.h"

namespace nvl::emu::live {

inline constexpr std::int64_t kBytesPerToken = 4;

struct PromptEstimate {
  std::int64_t tokens = 0;
  std::vector<engine::BlockHash> block_hashes;  // one per full block of block_tokens tokens
};

// block_tokens > 0.
PromptEstimate estimate_prompt(std::string_view text, std::int64_t block_tokens);

}  // namespace nvl::emu::live
