#include "engine/router/load_view.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace nvl::engine {

LoadView::LoadView(std::int32_t ranks) {
  if (ranks < 1) throw std::invalid_argument("load view: needs at least one rank");
  loads_.resize(static_cast<std::size_t>(ranks));
  reported_at_.resize(static_cast<std::size_t>(ranks));
}

void LoadView::report(std::int32_t rank, const RankLoad& load, rt::Time at) {
  if (rank < 0 || static_cast<std::size_t>(rank) >= loads_.size()) {
    throw std::invalid_argument("load view: report from unknown rank " + std::to_string(rank));
  }
  const auto r = static_cast<std::size_t>(rank);
  if (at < reported_at_[r]) return;
  reported_at_[r] = at;
  loads_[r] = load;
}

void LoadView::routed(std::int32_t rank, std::int64_t prompt_tokens, std::int64_t prompt_blocks) {
  RankLoad& l = loads_.at(static_cast<std::size_t>(rank));
  ++l.waiting;
  l.tokens_in_flight += prompt_tokens;
  l.free_kv_blocks = std::max<std::int64_t>(0, l.free_kv_blocks - prompt_blocks);
}

}  // namespace nvl::engine
