#include "emu/live/prompt_estimate.h"

#include <algorithm>
#include <stdexcept>

#include "emu/rt/hash.h"

namespace nvl::emu::live {

PromptEstimate estimate_prompt(std::string_view text, std::int64_t block_tokens) {
  if (block_tokens <= 0) throw std::invalid_argument("estimate_prompt: block_tokens must be positive");
  PromptEstimate e;
  const auto bytes = static_cast<std::int64_t>(text.size());
  e.tokens = std::max<std::int64_t>(1, (bytes + kBytesPerToken - 1) / kBytesPerToken);
  const std::int64_t block_bytes = block_tokens * kBytesPerToken;
  const std::int64_t full_blocks = bytes / block_bytes;
  std::uint64_t chain = rt::kFnvOffset;
  for (std::int64_t b = 0; b < full_blocks; ++b) {
    const auto chunk = text.substr(static_cast<std::size_t>(b * block_bytes), static_cast<std::size_t>(block_bytes));
    chain = rt::splitmix64(rt::fnv1a64(chunk, chain));
    e.block_hashes.push_back(chain);
  }
  return e;
}

}  // namespace nvl::emu::live
