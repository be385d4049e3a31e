#pragma once
// How the router picks a DP rank for a request: round-robin, least-load, cache-aware (SGLang's
// cache-aware router: follow the longest prefix hit unless the ranks are out of balance), and pooled
// (KV is one pool every rank reaches, so pick by load alone).
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "engine/router/prefix_index.h"

namespace nvl::engine {

struct RankLoad {
  std::int64_t running = 0;
  std::int64_t waiting = 0;
  std::int64_t tokens_in_flight = 0;
  std::int64_t free_kv_blocks = 0;
  bool healthy = true;

  std::int64_t requests() const { return running + waiting; }
};

struct RouteInput {
  std::span<const RankLoad> loads;
  std::span<const RankMatch> matches;  // per rank; empty when the policy ignores the cache
  std::int64_t prompt_blocks = 0;
};

// How a rank's decode load is scored (lower is lighter); ties go to fewer tokens in flight, then the
// lower rank. The defaults count requests alone, as SGLang's least-load does.
struct LoadWeights {
  double requests = 1.0;                 // per running or waiting request
  double tokens_in_flight_per_1k = 0.0;  // per 1,000 tokens held in KV by its running requests
  double free_kv_per_1k_blocks = 0.0;    // subtracted per 1,000 free KV blocks (room to grow)

  double score(const RankLoad& l) const;
};

// SGLang router defaults (sgl-router --cache-threshold, --balance-abs-threshold, --balance-rel-threshold).
struct CacheAwareOptions {
  double cache_threshold = 0.5;      // follow the cache only when a rank holds at least this share of the prompt
  std::int64_t balance_abs_threshold = 32;  // out of balance when max - min load exceeds this ...
  double balance_rel_threshold = 1.0001;    // ... and max exceeds min times this
};

class RoutingPolicy {
 public:
  virtual ~RoutingPolicy() = default;
  virtual std::string_view name() const = 0;
  virtual bool uses_prefix_index() const { return false; }
  // The chosen rank, or -1 when no rank is healthy.
  virtual std::int32_t choose(const RouteInput& in) = 0;
};

class RoundRobinPolicy final : public RoutingPolicy {
 public:
  std::string_view name() const override { return "round_robin"; }
  std::int32_t choose(const RouteInput& in) override;

 private:
  std::int32_t next_ = 0;
};

class LeastLoadPolicy final : public RoutingPolicy {
 public:
  explicit LeastLoadPolicy(LoadWeights weights = {}, std::string_view name = "least_load")
      : weights_(weights), name_(name) {}
  std::string_view name() const override { return name_; }
  std::int32_t choose(const RouteInput& in) override;

 private:
  LoadWeights weights_;
  std::string_view name_;
};

class CacheAwarePolicy final : public RoutingPolicy {
 public:
  explicit CacheAwarePolicy(CacheAwareOptions opts = {}, LoadWeights weights = {}) : opts_(opts), least_(weights) {}
  std::string_view name() const override { return "cache_aware"; }
  bool uses_prefix_index() const override { return true; }
  std::int32_t choose(const RouteInput& in) override;

 private:
  CacheAwareOptions opts_;
  LeastLoadPolicy least_;
};

// "round_robin", "least_load", "cache_aware" or "pooled" (least load under another name: with one KV
// pool there is no cache to follow); anything else, or negative weights or thresholds, throws
// std::invalid_argument.
std::unique_ptr<RoutingPolicy> make_routing_policy(std::string_view name, CacheAwareOptions opts = {},
                                                   LoadWeights weights = {});

}  // namespace nvl::engine
