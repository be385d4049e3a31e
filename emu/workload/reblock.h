#pragma once
// Maps a prompt's block hashes to another block size (e.g. the KV cache's). New block j ends at token
// T = (j+1) * to_block_tokens; the prefix [0, T) is fixed by the source block holding token T-1 (whose id
// identifies its whole prefix) and by T, so its hash mixes those two. Equal new hashes therefore mean equal
// prefixes, and the result is deterministic. Only full target blocks inside the hashed part are returned.
#include <cstdint>
#include <span>
#include <vector>

namespace nvl::emu {

std::vector<std::uint64_t> reblock(std::span<const std::uint64_t> hashes, std::int64_t prompt_tokens,
                                   std::int32_t from_block_tokens, std::int32_t to_block_tokens);

}  // namespace nvl::emu
