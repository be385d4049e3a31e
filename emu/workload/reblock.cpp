#include "emu/workload/reblock.h"

#include <algorithm>
#include <stdexcept>

#include "emu/rt/hash.h"

namespace nvl::emu {

std::vector<std::uint64_t> reblock(std::span<const std::uint64_t> hashes, std::int64_t prompt_tokens,
                                   std::int32_t from_block_tokens, std::int32_t to_block_tokens) {
  if (from_block_tokens <= 0 || to_block_tokens <= 0) throw std::invalid_argument("reblock: block sizes must be > 0");
  const std::int64_t covered =
      std::min(prompt_tokens, static_cast<std::int64_t>(hashes.size()) * from_block_tokens);
  const std::int64_t count = covered / to_block_tokens;
  std::vector<std::uint64_t> out;
  out.reserve(static_cast<std::size_t>(count));
  if (from_block_tokens == to_block_tokens) {
    out.assign(hashes.begin(), hashes.begin() + count);
    return out;
  }
  for (std::int64_t j = 0; j < count; ++j) {
    const std::int64_t end = (j + 1) * to_block_tokens;
    const std::uint64_t source = hashes[static_cast<std::size_t>((end - 1) / from_block_tokens)];
    out.push_back(rt::splitmix64(source ^ rt::splitmix64(static_cast<std::uint64_t>(end))));
  }
  return out;
}

}  // namespace nvl::emu
