#pragma once
// Samples a running deployment at a fixed simulated interval into a Timeline: token throughput, queued
// and running requests (also per pool, with KV occupancy), each GPU's compute busy share, link
// utilisation by class, KV hits by tier, and the TTFT split of the requests by their first token's interval.
// It only reads counters (O(GPUs + channels) per sample, O(1) per token delivery) and schedules
// nothing, so sampling never changes the run or its event-log hash.
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "emu/report/run_report.h"
#include "emu/report/timeline.h"
#include "emu/scenario/deployment.h"
#include "emu/scenario/gpu_roles.h"

namespace nvl::emu {

class TimelineSampler {
 public:
  // `layout` names each GPU's row: "gpu3 dep rank 3", "gpu64 prefill 0" (pool, then DP rank or instance).
  TimelineSampler(rt::Runtime& rt, Deployment& deployment, const ScenarioDeployment& layout, double interval_s);

  void on_submit(const engine::RequestState& r);
  void on_tokens(engine::RequestId id, std::int64_t count, bool first);
  // Adds the request's TTFT split to the interval of its first token.
  void on_done(const engine::RequestTiming& t);
  // Closes the interval since the previous sample at now().
  void sample();

  const Timeline& timeline() const { return timeline_; }
  // The timeline with the TTFT split's means (requests done after the last sample are in it).
  Timeline take();
  // Whole-run figures from the counters (KV hits now; link use from the samples taken).
  KvHits kv_hits() const;
  std::map<std::string, LinkUse> link_use() const;
  // How unevenly the DP ranks of a pool run requests: the most any rank runs over the mean per rank, at each
  // sample where the pool (of 2 ranks or more) runs any, averaged over those samples (1: even; 0: none).
  double dp_imbalance() const;

 private:
  struct LinkClass {
    std::string name;
    std::vector<int> channels;
    double capacity_bytes_per_s = 0;
  };
  rt::Runtime& rt_;
  Deployment& deployment_;
  Timeline timeline_;
  rt::Time last_;
  std::unordered_map<engine::RequestId, std::int64_t> prompt_tokens_;  // until the first token
  std::unordered_map<engine::RequestId, std::size_t> first_token_sample_;  // until done
  PoolMembership pools_;
  struct SplitSums {
    double queue = 0, prefill = 0, kv_transfer = 0, first_decode = 0;
    std::size_t requests = 0;
  };
  std::vector<SplitSums> split_;  // per sample
  double input_tokens_ = 0;   // since the last sample
  double output_tokens_ = 0;
  std::vector<rt::Duration> busy_;      // per GPU, at the last sample
  std::vector<double> carried_;         // per channel, at the last sample
  std::vector<LinkClass> classes_;
  std::map<std::string, double> class_bytes_;  // whole run
  KvHits kv_last_;
  double imbalance_sum_ = 0;
  std::size_t imbalance_samples_ = 0;
};

}  // namespace nvl::emu
