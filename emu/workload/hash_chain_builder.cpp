#include "emu/workload/hash_chain_builder.h"

#include <algorithm>

namespace nvl::emu {

std::vector<std::uint64_t>& HashChainBuilder::writable() {
  if (!current_) current_ = std::make_shared<std::vector<std::uint64_t>>();
  return *current_;
}

void HashChainBuilder::truncate(std::size_t size) {
  if (size >= this->size()) return;
  // Earlier snapshots may view the ids past `size`: copy instead of overwriting them.
  current_ = std::make_shared<std::vector<std::uint64_t>>(current_->begin(),
                                                         current_->begin() + static_cast<std::ptrdiff_t>(size));
}

HashChain HashChainBuilder::assign(std::span<const std::uint64_t> ids) {
  const std::size_t have = size();
  const std::size_t common_limit = std::min(have, ids.size());
  std::size_t common = 0;
  if (current_) {
    common = static_cast<std::size_t>(
        std::mismatch(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(common_limit), current_->begin()).first -
        ids.begin());
  }
  if (common == ids.size()) return snapshot(common);  // a prefix of what is stored
  truncate(common);
  auto& v = writable();
  v.insert(v.end(), ids.begin() + static_cast<std::ptrdiff_t>(common), ids.end());
  return snapshot();
}

}  // namespace nvl::emu
