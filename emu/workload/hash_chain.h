#pragma once
// The block hashes of one prompt: a view of the first `size` ids of a chain that a session's requests share.
// Consecutive prompts of a conversation extend each other, so storing one growing vector per chain and a
// length per request keeps a long agent session at O(unique blocks) memory instead of O(sum of prompts).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace nvl::emu {

class HashChain {
 public:
  HashChain() = default;
  HashChain(std::shared_ptr<const std::vector<std::uint64_t>> chain, std::size_t size)
      : chain_(std::move(chain)), size_(size) {}

  std::span<const std::uint64_t> ids() const {
    return chain_ ? std::span<const std::uint64_t>(chain_->data(), size_) : std::span<const std::uint64_t>();
  }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  std::shared_ptr<const std::vector<std::uint64_t>> chain_;
  std::size_t size_ = 0;
};

}  // namespace nvl::emu
