#pragma once
// A checker watches one run and gives a verdict at its end. The runner drives every checker the same
// way: on_submit for each request the workload sends, on_tokens for each delivery, on_done when the
// system reports a request over, on_record for each event-log record, then finish() once. A new
// checker implements the hooks it needs (the others are no-ops), lives in its own file under
// emu/check/, and is added to the list in make_standard_checkers(). Hooks must be cheap (O(1) per
// call): they run on every event of hour-long runs.
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "emu/check/check_result.h"
#include "emu/check/run_end.h"
#include "emu/rt/event_log.h"
#include "engine/sched/request_state.h"
#include "engine/system/request_timing.h"

namespace nvl::emu {

class RunChecker {
 public:
  virtual ~RunChecker() = default;
  // The key under report.json's `checks`.
  virtual std::string name() const = 0;
  virtual void on_submit(const engine::RequestState&) {}
  virtual void on_tokens(engine::RequestId, std::int64_t /*count*/, bool /*first*/, bool /*finished*/) {}
  virtual void on_done(const engine::RequestTiming&) {}
  virtual void on_record(rt::Time, std::string_view /*source*/, std::string_view /*kind*/, const nlohmann::json&,
                         rt::Severity) {}
  virtual CheckResult finish(const RunEnd& end) = 0;
};

}  // namespace nvl::emu
