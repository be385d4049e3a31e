#pragma once
// Feeds a workload to the serving system closed-loop: each session's next request leaves at its
// earliest departure after the previous answer; sub-agents start when their parent reaches their
// spawn point.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "emu/rt/runtime.h"
#include "emu/workload/arrival_process.h"
#include "emu/workload/session_cursor.h"
#include "emu/workload/workload.h"
#include "engine/system/pd_system.h"

namespace nvl::emu {

class SessionDriver {
 public:
  // Trace blocks are re-cut to `kv_block_tokens`, the engine's block size.
  SessionDriver(rt::Runtime& rt, const Workload& workload, const ArrivalProcess& arrivals,
                std::int64_t kv_block_tokens);

  void attach(engine::PdSystem& system) { system_ = &system; }
  // Told of each request just before it is submitted (checkers, timelines).
  void set_submit_observer(std::function<void(const engine::RequestState&)> observer) {
    on_submit_ = std::move(observer);
  }
  void start();
  // The system reports a request over (finished or failed): its session goes on.
  void on_done(const engine::RequestTiming& t);

  const std::vector<engine::RequestTiming>& timings() const { return timings_; }
  std::uint64_t submitted() const { return next_id_ - 1; }
  std::size_t outstanding() const { return owner_.size(); }

 private:
  void schedule_start(const SessionStart& s);
  void send_next(std::size_t cursor);
  void submit(std::size_t cursor);

  rt::Runtime& rt_;
  const Workload& workload_;
  const ArrivalProcess& arrivals_;
  std::int64_t kv_block_tokens_;
  engine::PdSystem* system_ = nullptr;
  std::vector<std::unique_ptr<SessionCursor>> cursors_;
  std::map<engine::RequestId, std::size_t> owner_;  // request in flight -> its session cursor
  std::uint64_t next_id_ = 1;
  std::vector<engine::RequestTiming> timings_;
  std::function<void(const engine::RequestState&)> on_submit_;
};

}  // namespace nvl::emu
