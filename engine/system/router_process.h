#pragma once
// The router process: routes each request to a DP rank of a decoding instance and, for a long prompt,
// to a prefill instance; keeps the load view the ranks report and the prefix index their KV events
// feed; queues long prompts that find no KV room; watches every rank and prefill instance and declares
// the dead ones, re-routing the requests a dead rank held (engine/system/router_health.cpp).
#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "emu/rt/runtime.h"
#include "engine/router/load_view.h"
#include "engine/router/router.h"
#include "engine/system/control_plane.h"
#include "engine/system/health_monitor.h"
#include "engine/system/pd_config.h"
#include "engine/system/pd_directory.h"

namespace nvl::engine {

class RouterProcess {
 public:
  // `fetch_rdma`: a prefix can be fetched from a peer (the deployment has RDMA).
  RouterProcess(rt::Runtime& rt, const PdSystemConfig& cfg, ControlPlane& control, PdDirectory& dir,
                std::int32_t ranks, RouterConfig router, bool fetch_rdma, std::size_t decode_instances,
                std::size_t prefill_instances);

  void on_message(const proto::ControlMessage& m);
  // Starts watching every rank and prefill instance (once they all exist).
  void start_health();
  void check_health(std::int32_t rank, HealthDone done);
  // Every health check of `rank` still waiting gets this answer.
  void answer_health(std::int32_t rank, bool healthy, const std::string& detail);

  const Router& router() const { return router_; }
  const LoadView& view() const { return view_; }
  HealthMonitor& health() { return *health_; }
  const HealthMonitor& health() const { return *health_; }
  std::uint64_t routed(PrefillPath path) const { return routed_[static_cast<std::size_t>(path)]; }
  std::uint64_t routed_to_instance(std::size_t instance) const { return routed_to_instance_.at(instance); }
  std::size_t pending() const { return pending_.size(); }
  // The fault a prefill instance was declared dead for (nullopt: up).
  const std::optional<std::string>& prefill_down(std::size_t instance) const { return prefill_down_.at(instance); }

  // In-process, as before the split (each a control message in a real deployment; one here would
  // cross the host network and change the results):
  // a rank sends back a request that reached it after the router declared it dead;
  void route(RequestState request);
  // a rank found no KV room for a long prompt: it waits in the queue, routed again (a prefill instance
  // chosen again) when KV frees up;
  void requeue(RequestState request);
  // a request ended (the router hears it from the frontend, as Dynamo's router, one process with its
  // frontend, sees each response stream end): KV room may have freed up for the queued long prompts;
  void ended(RequestId id);
  // a prefill instance finished, dropped or handed back a prompt: it no longer counts against it (the
  // instance's load report);
  void forget_prefill(RequestId id);
  // a request stopped everywhere after a lost message leaves the queue;
  void drop_pending(RequestId id);
  // a request migrated off a dead rank resumes from its delivered tokens, which its ScheduleOnRank
  // would carry (nullopt: not migrated);
  std::optional<std::int64_t> take_resume(RequestId id);
  // why a declared rank, not back yet, died;
  std::string dead_why(std::int32_t rank) const;
  // a rank or a prefill instance reports a failed step, and the health monitor watches;
  void operation_error(std::int32_t member);
  // a rank or a prefill instance is back after its reset or restart (its supervisor tells the router).
  void rank_back(std::int32_t rank, const RankLoad& load);
  void prefill_back(std::size_t instance, bool crashed, const std::string& why);

  // Faults (engine/system/router_health.cpp): the router restarts, its prefix index rebuilt from the
  // ranks' republished KV events.
  void restart();

 private:
  void cancel(const proto::Cancel& c);
  // The prefill instance for a long prompt: the live one with the fewest prompt tokens sent to it and
  // not yet prefilled (nullopt: none is up).
  std::optional<std::size_t> choose_prefill() const;
  void retry_pending();
  bool any_prefill_up() const;
  void declare_dead(std::int32_t rank, const std::string& why);
  void declare_prefill_dead(std::size_t instance, const std::string& why);
  void migrate(std::int32_t rank, std::vector<RequestState> requests, const std::string& why);
  std::int64_t block_tokens() const { return router_.config().block_tokens; }

  rt::Runtime& rt_;
  const PdSystemConfig& cfg_;
  ControlPlane& control_;
  PdDirectory& dir_;
  Router router_;
  LoadView view_;
  bool fetch_rdma_ = false;
  std::deque<RequestState> pending_;  // long prompts waiting for KV room on their rank
  bool retrying_ = false;
  std::array<std::uint64_t, 2> routed_{};
  std::vector<std::uint64_t> routed_to_instance_;
  std::map<RequestId, std::int32_t> placed_;  // the DP rank each request in flight was last routed to
  std::map<RequestId, std::pair<std::size_t, std::int64_t>> prefill_sent_;  // request -> (instance, tokens)
  std::vector<std::int64_t> prefill_outstanding_;  // per prefill instance: prompt tokens sent, not yet prefilled
  std::vector<std::optional<std::string>> prefill_down_;  // per prefill instance: declared dead, the fault
  std::optional<HealthMonitor> health_;
  std::map<std::int32_t, std::vector<HealthDone>> health_waiting_;  // per rank
  std::map<RequestId, std::int64_t> resume_from_;  // moved off a dead rank: output tokens delivered
  std::map<std::int32_t, std::string> dead_why_;    // declared ranks not back yet: the fault
};

}  // namespace nvl::engine
