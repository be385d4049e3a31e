#pragma once
// The router's view of the DP ranks' loads: the last report each rank published (so it is as stale as
// the report interval, as in SGLang's and Dynamo's routers), plus the requests the router itself sent
// there since, so that a burst between two reports does not all land on the rank that looked lightest.
#include <cstdint>
#include <span>
#include <vector>

#include "emu/rt/time.h"
#include "engine/router/routing_policy.h"

namespace nvl::engine {

class LoadView {
 public:
  explicit LoadView(std::int32_t ranks);

  // A rank's report made at `at`; one older than the last one taken is ignored (reordered delivery).
  void report(std::int32_t rank, const RankLoad& load, rt::Time at);
  // The router sent the rank a request: it counts as waiting, with its prompt's tokens and blocks.
  void routed(std::int32_t rank, std::int64_t prompt_tokens, std::int64_t prompt_blocks);
  std::span<const RankLoad> loads() const { return loads_; }
  const RankLoad& at(std::int32_t rank) const { return loads_.at(static_cast<std::size_t>(rank)); }

 private:
  std::vector<RankLoad> loads_;
  std::vector<rt::Time> reported_at_;
};

}  // namespace nvl::engine
