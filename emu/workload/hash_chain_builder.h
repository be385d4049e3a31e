#pragma once
// Builds the HashChains of one session: requests that extend the previous prompt share its storage; a
// prompt that diverges (an edited or rewritten context) copies the common prefix into a new chain.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "emu/workload/hash_chain.h"

namespace nvl::emu {

class HashChainBuilder {
 public:
  // Keeps the first `size` ids (copy-on-write when earlier snapshots saw more).
  void truncate(std::size_t size);
  void push(std::uint64_t id) { writable().push_back(id); }
  std::size_t size() const { return current_ ? current_->size() : 0; }
  // A view of the first `size` ids as they are now.
  HashChain snapshot(std::size_t size) const { return HashChain(current_, size); }
  HashChain snapshot() const { return snapshot(size()); }
  // Replaces the chain by `ids`, sharing the longest common prefix with the current one.
  HashChain assign(std::span<const std::uint64_t> ids);

 private:
  std::vector<std::uint64_t>& writable();
  std::shared_ptr<std::vector<std::uint64_t>> current_;
};

}  // namespace nvl::emu
