#include "emu/live/live_faults.h"

#include "emu/rt/errors.h"

namespace nvl::emu::live {

namespace {

constexpr const char* kSource = "POST /admin/fault";

}  // namespace

LiveFaults::LiveFaults(rt::Runtime& rt, const Scenario& scenario, Deployment& deployment)
    : rt_(rt), deployment_(deployment), context_(fault_context(scenario)) {}

void LiveFaults::inject(const nlohmann::json& fault, std::function<void(const std::string&)> applied) {
  if (!fault.is_object()) throw rt::InputError(kSource, "", "expected a fault object with a \"kind\"");
  if (fault.contains("at_s")) throw rt::InputError(kSource, "at_s", "a live fault hits now: leave at_s out");
  if (fault.contains("rate_per_hour")) {
    throw rt::InputError(kSource, "rate_per_hour", "a live fault hits once, now: random faults belong in a scenario");
  }
  nlohmann::json now = fault;
  const rt::Time at = rt_.now();
  now["at_s"] = at.since_start().seconds();
  const FaultPlan plan = read_fault_plan(nlohmann::json::array({now}), kSource, context_);
  const rt::Time hits = rt::Time::zero() + rt::from_seconds(now["at_s"].get<double>());
  injectors_.push_back(std::make_unique<FaultInjector>(rt_, plan, hits + rt::from_seconds(1),
                                                       deployment_.cluster(), deployment_.system()));
  // Same time, scheduled later: runs once the injector's event has applied the fault.
  std::string what = std::string(to_string(plan.scheduled.front().kind));
  if (!fault.value("target", nlohmann::json()).is_null()) what += " on " + fault["target"].dump();
  rt_.call_at(hits, [applied = std::move(applied), what] { applied(what); });
}

}  // namespace nvl::emu::live
