#pragma once
// A run's figures over simulated time, one sample per fixed interval (outputs.timeline_interval_s):
// what the HTML report plots.
#include <map>
#include <string>
#include <vector>

namespace nvl::emu {

struct Timeline {
  double interval_s = 1.0;
  std::vector<double> t_s;  // end of each sample's interval (the last may be shorter)
  std::vector<double> input_tokens_per_s;   // prompt tokens of requests that got their first token
  std::vector<double> output_tokens_per_s;  // tokens delivered
  std::vector<double> waiting;  // requests queued: in the ranks' and prefill worker's queues, or held by the system
  std::vector<double> running;  // requests in a rank's running batch
  std::vector<std::string> gpu_names;
  std::vector<std::vector<double>> gpu_busy;  // [gpu][sample]: share of the interval with compute running
  // Link class ("nvlink", "c2c", "pcie", "nic", "uplink") -> [sample]: bytes carried over the class's
  // capacity (mean over its channels), and the busiest single channel's share.
  std::map<std::string, std::vector<double>> link_mean;
  std::map<std::string, std::vector<double>> link_peak;
  // KV cache lookups per interval: tokens asked for, and hits by tier ("gpu", "grace", "remote").
  std::vector<double> kv_lookup_tokens;
  std::map<std::string, std::vector<double>> kv_hit_tokens;
  // Each pool's ranks (by the pool's name) -> [sample]: requests queued on them (the router's own queue is
  // in `waiting` only), requests in their running batches, and the share of their GPU KV blocks that
  // requests hold (cached blocks count as free: they are evicted on demand).
  struct PoolSeries {
    std::vector<double> waiting;
    std::vector<double> running;
    std::vector<double> kv_used;
  };
  std::map<std::string, PoolSeries> pools;
  // The TTFT split of the requests whose first token came in each interval, mean seconds per part
  // ("queue", "prefill", "kv_transfer", "first_decode": RequestTiming's parts); NaN where none did.
  std::map<std::string, std::vector<double>> ttft_split_s;

  std::size_t samples() const { return t_s.size(); }
};

}  // namespace nvl::emu
