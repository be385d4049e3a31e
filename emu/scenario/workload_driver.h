#pragma once
// What the runner needs of a workload driver: it submits requests to the serving system, is told when
// each is over, and keeps their timings. SessionDriver paces sessions (recorded starts, Poisson, think
// time); ClosedLoopDriver keeps a fixed number of requests in flight (the bench tools' concurrency).
#include <cstdint>
#include <functional>
#include <vector>

#include "emu/rt/runtime.h"
#include "emu/workload/session.h"
#include "engine/sched/request_state.h"
#include "engine/system/pd_system.h"
#include "engine/system/request_timing.h"

namespace nvl::emu {

class WorkloadDriver {
 public:
  using Submitter = std::function<void(engine::RequestState)>;

  // Trace blocks are re-cut to `kv_block_tokens`, the engine's block size.
  WorkloadDriver(rt::Runtime& rt, std::int64_t kv_block_tokens) : rt_(rt), kv_block_tokens_(kv_block_tokens) {}
  virtual ~WorkloadDriver() = default;
  WorkloadDriver(const WorkloadDriver&) = delete;
  WorkloadDriver& operator=(const WorkloadDriver&) = delete;

  void attach(engine::PdSystem& system) {
    submitter_ = [&system](engine::RequestState r) { system.submit(std::move(r)); };
  }
  // Where requests go instead of a system (tests).
  void set_submitter(Submitter submitter) { submitter_ = std::move(submitter); }
  // Told of each request just before it is submitted (checkers, timelines).
  void set_submit_observer(std::function<void(const engine::RequestState&)> observer) {
    on_submit_ = std::move(observer);
  }
  virtual void start() = 0;
  // The system reports a request over (finished or failed).
  virtual void on_done(const engine::RequestTiming& t) = 0;
  // Requests whose figures the benchmark leaves out (a warm-up phase).
  virtual bool is_warmup(engine::RequestId /*id*/) const { return false; }
  virtual std::size_t outstanding() const = 0;

  const std::vector<engine::RequestTiming>& timings() const { return timings_; }
  std::uint64_t submitted() const { return next_id_ - 1; }

 protected:
  // The engine's request for `req` of `session`, leaving now with the next id.
  engine::RequestState make_request(const Session& session, const Request& req);
  void send(engine::RequestState r);
  void record(const engine::RequestTiming& t) { timings_.push_back(t); }
  rt::Runtime& runtime() { return rt_; }

 private:
  rt::Runtime& rt_;
  std::int64_t kv_block_tokens_;
  Submitter submitter_;
  std::function<void(const engine::RequestState&)> on_submit_;
  std::uint64_t next_id_ = 1;
  std::vector<engine::RequestTiming> timings_;
};

}  // namespace nvl::emu
