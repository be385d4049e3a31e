#pragma once
// An emulated GPU: a device profile brought to life on the runtime. It implements hal::Device for
// the engine, and offers the harness (and tests) its faults:
//   gpu_lost     Xid 79: every running and queued operation fails, HBM and its allocations are
//                gone, every later operation fails; for good.
//   ecc_error    Xid 48: the running operations fail, and so does what is queued (the context is
//                dead); every later operation fails until reset().
//   nvlink_error Xid 74: logged and reported to the fault listeners (the fabric decides the rest).
//   throttle     compute runs at a fraction of the clock for a period.
// Each fault is logged with severity warning, and so is each operation that fails because of one:
// injected faults are expected events of a run; error severity is kept for broken invariants.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "emu/rt/runtime.h"
#include "engine/hal/device.h"
#include "fakegpu/accounted_memory.h"
#include "fakegpu/compute_engine.h"
#include "fakegpu/cost_model.h"
#include "fakegpu/device_fault.h"
#include "fakegpu/device_profile.h"
#include "fakegpu/fake_stream.h"
#include "fakegpu/op_span.h"
#include "fakegpu/outcome_model.h"
#include "fakegpu/priced_time.h"
#include "fakegpu/sampled_outcomes.h"
#include "fakegpu/transfer_path.h"

namespace nvl::fakegpu {

class FakeDevice final : public hal::Device {
 public:
  // `host_memory` is the pinned memory of the GPU's host (shared with the host's other GPUs);
  // `path` prices copies until set_transfer_path() replaces it.
  FakeDevice(rt::Runtime& rt, hal::DeviceId id, std::shared_ptr<const DeviceProfile> profile, hal::HostId host,
             std::shared_ptr<AccountedMemory> host_memory, TransferPath& path);
  ~FakeDevice() override;

  const hal::DeviceInfo& info() const override { return info_; }
  hal::DeviceHealth health() const override { return health_; }
  hal::Memory& memory() override { return *hbm_; }
  hal::Memory& host_memory() override { return *host_memory_; }
  hal::StepOutcomes& outcomes() override { return outcomes_; }
  hal::Stream& create_stream(const std::string& name, double sm_fraction = 1.0) override;
  hal::Stream& create_stream_taking_turns(const std::string& name, hal::Stream& with) override;
  std::shared_ptr<hal::GpuEvent> create_event(const std::string& name) override;
  std::shared_ptr<hal::GraphExec> instantiate(const hal::Graph& graph) override;
  // Updates any graph in place (emulated execs have no fixed topology).
  bool update(hal::GraphExec& exec, const hal::Graph& graph) override;
  void reset() override;

  void inject_gpu_lost();
  void inject_ecc_error();
  void inject_nvlink_error(int link);
  // clock_factor in (0, 1], period > 0 (std::invalid_argument otherwise); a new throttle replaces
  // one still running. Compute runs at clock_factor; memory-bound work at the memory factor the
  // profile's throttle_memory_coupling gives.
  void throttle(double clock_factor, rt::Duration period);
  double clock_factor() const { return compute_.clock().compute; }
  double memory_factor() const { return compute_.clock().memory; }
  void add_fault_listener(FaultListener listener) { listeners_.push_back(std::move(listener)); }
  // Told of every kernel, graph and copy when it ends (one observer; empty: none).
  void set_span_observer(SpanObserver observer) { span_observer_ = std::move(observer); }
  const SpanObserver& span_observer() const { return span_observer_; }
  // Told of what runs inside each graph launch, as each part ends: every kernel (its share of its
  // segment's time by its priced time alone), collective, and fast-forwarded run of a repeated body.
  // Graphs instantiated while it is set keep their kernels' names for it. Empty: none.
  void set_detail_observer(SpanObserver observer) { detail_observer_ = std::move(observer); }
  const SpanObserver& detail_observer() const { return detail_observer_; }

  // The statistics its step outcomes are drawn from (its pool's); until set, uniform expert
  // popularity and no MTP draft accepted.
  void set_outcome_model(std::shared_ptr<OutcomeModel> model) { outcomes_.set_model(std::move(model)); }

  // Routes this device's copies through another path (the fabric's); it must outlive the device.
  void set_transfer_path(TransferPath& path) { path_ = &path; }
  // Graphs instantiated from now on run every iteration of their repeated bodies (false: the exact
  // reference mode) or fast-forward them (true, the default).
  void set_fast_forward(bool on) { fast_forward_ = on; }
  // Kernels priced from now on: CostModel::use_measured_kernels (before any is priced: prices are kept).
  void use_measured_kernels(const MeasuredKernels& tables) { cost_.use_measured_kernels(tables); }
  // Kernel time launched so far, as priced alone at nominal clock, by kind.
  const PricedTime& priced_time() const { return priced_; }
  void count_priced(const PricedTime& launched) { priced_.add(launched); }
  void count_priced(const KernelCost& kernel, double ns) { priced_.add(kernel, ns); }

  // For the device's streams.
  rt::Runtime& runtime() const { return rt_; }
  const std::string& source() const { return source_; }  // "gpu<id>", the event-log source
  const DeviceProfile& profile() const { return *profile_; }
  const CostModel& cost_model() const { return cost_; }
  ComputeEngine& compute() { return compute_; }
  // Throws HalError (with the Xid) unless the device is healthy; `op` names the refused operation.
  void check_usable(std::string_view op) const {
    if (health_ != hal::DeviceHealth::healthy) refuse_unusable(std::string(op));
  }
  // As above for the operation "<what> '<name>'", spelled out only when refused.
  void check_usable(std::string_view what, std::string_view name) const {
    if (health_ != hal::DeviceHealth::healthy) refuse_unusable(std::string(what) + " '" + std::string(name) + "'");
  }
  void transfer(const TransferRequest& request, TransferDone done) { path_->transfer(request, std::move(done)); }

 private:
  // Logs the refused operation and throws its HalError.
  [[noreturn]] void refuse(const std::string& op, hal::Xid xid, const std::string& detail) const;
  // Refuses `op` for the device's health (it is not healthy).
  [[noreturn]] void refuse_unusable(const std::string& op) const;
  // Logs the fault, drains every stream when drain_reason is set, then tells the listeners.
  void fault(hal::Xid xid, int link, nlohmann::json fields, const std::string& drain_reason);

  rt::Runtime& rt_;
  std::shared_ptr<const DeviceProfile> profile_;
  hal::DeviceInfo info_;
  std::string source_;
  CostModel cost_;
  PricedTime priced_;
  bool fast_forward_ = true;
  ComputeEngine compute_;
  std::shared_ptr<AccountedMemory> hbm_;
  std::shared_ptr<AccountedMemory> host_memory_;
  TransferPath* path_;
  hal::DeviceHealth health_ = hal::DeviceHealth::healthy;
  std::vector<std::unique_ptr<FakeStream>> streams_;
  std::vector<FaultListener> listeners_;
  rt::TimerHandle throttle_end_;
  SpanObserver span_observer_;
  SpanObserver detail_observer_;
  SampledOutcomes outcomes_;
};

}  // namespace nvl::fakegpu
