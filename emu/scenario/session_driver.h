#pragma once
// Feeds a workload to the serving system closed-loop: each session's next request leaves at its
// earliest departure after the previous answer; sub-agents start when their parent reaches their
// spawn point.
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "emu/scenario/workload_driver.h"
#include "emu/workload/arrival_process.h"
#include "emu/workload/session_cursor.h"
#include "emu/workload/workload.h"

namespace nvl::emu {

class SessionDriver : public WorkloadDriver {
 public:
  SessionDriver(rt::Runtime& rt, const Workload& workload, const ArrivalProcess& arrivals,
                std::int64_t kv_block_tokens);

  void start() override;
  // The system reports a request over (finished or failed): its session goes on.
  void on_done(const engine::RequestTiming& t) override;
  std::size_t outstanding() const override { return owner_.size(); }

 private:
  void schedule_start(const SessionStart& s);
  void send_next(std::size_t cursor);
  void submit(std::size_t cursor);

  const Workload& workload_;
  const ArrivalProcess& arrivals_;
  std::vector<std::unique_ptr<SessionCursor>> cursors_;
  std::map<engine::RequestId, std::size_t> owner_;  // request in flight -> its session cursor
};

}  // namespace nvl::emu
