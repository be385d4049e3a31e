#pragma once
// Closed-loop load as the bench tools run it (sglang.bench_serving --max-concurrency, vllm bench serve
// --max-concurrency, AIPerf --concurrency): `concurrency` requests in flight, the next sent the moment one
// is over, in workload order, until every request is done. A warm-up phase comes first, as AIPerf's
// --warmup-request-count: the first `warmup` sessions run under the same concurrency, the measured phase
// starts once every warm-up request is over (AIPerf waits for all warm-up responses before profiling), and
// warm-up requests count in no benchmark figure. Then the next `requests` sessions are the measured ones.
// Every session must be one request (bench, Mooncake, Azure): a closed loop has no think time to honour.
#include <cstdint>
#include <set>
#include <string>

#include "emu/scenario/workload_driver.h"
#include "emu/workload/workload.h"

namespace nvl::emu {

struct ClosedLoopOptions {
  std::int64_t concurrency = 1;
  std::int64_t warmup = 0;
  std::int64_t requests = 0;  // measured requests
};

class ClosedLoopDriver : public WorkloadDriver {
 public:
  // Throws rt::InputError (naming workload.concurrency or workload.requests) when a session has more than
  // one request or is a sub-agent, or when the workload holds fewer than warmup + requests sessions.
  ClosedLoopDriver(rt::Runtime& rt, const Workload& workload, const ClosedLoopOptions& options,
                   std::int64_t kv_block_tokens, const std::string& file);

  void start() override;
  void on_done(const engine::RequestTiming& t) override;
  bool is_warmup(engine::RequestId id) const override { return warmup_ids_.contains(id); }
  std::size_t outstanding() const override { return in_flight_.size(); }

 private:
  // Sends sessions [next_, end) while fewer than `concurrency` are in flight.
  void fill(std::size_t end);

  const Workload& workload_;
  ClosedLoopOptions options_;
  std::size_t next_ = 0;  // the next session to send
  std::set<engine::RequestId> in_flight_;
  std::set<engine::RequestId> warmup_ids_;
};

}  // namespace nvl::emu
