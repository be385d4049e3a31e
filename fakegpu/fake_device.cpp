#include "fakegpu/fake_device.h"

#include <algorithm>
#include <stdexcept>

#include "fakegpu/fake_event.h"
#include "fakegpu/fake_graph_exec.h"

namespace nvl::fakegpu {

namespace {
hal::DeviceInfo info_of(hal::DeviceId id, const DeviceProfile& p, hal::HostId host) {
  hal::DeviceInfo info;
  info.id = id;
  info.name = p.name;
  info.host = host;
  info.hbm_bytes = p.hbm_usable_bytes;
  info.hbm_bytes_per_s = p.hbm_bytes_per_s;
  info.sm_count = p.sm_count;
  info.peak_flops_per_s = p.peak_flops_per_s;
  return info;
}
}  // namespace

FakeDevice::FakeDevice(rt::Runtime& rt, hal::DeviceId id, std::shared_ptr<const DeviceProfile> profile,
                       hal::HostId host, std::shared_ptr<AccountedMemory> host_memory, TransferPath& path)
    : rt_(rt),
      profile_(std::move(profile)),
      info_(info_of(id, *profile_, host)),
      source_("gpu" + std::to_string(id)),
      cost_(*profile_, id),
      compute_(rt),
      hbm_(std::make_shared<AccountedMemory>(rt, hal::MemoryLocation{hal::MemoryKind::device, id},
                                             profile_->hbm_usable_bytes, source_)),
      host_memory_(std::move(host_memory)),
      path_(&path),
      outcomes_(rt.rng("step-outcomes/" + source_), std::make_shared<OutcomeModel>(rt, source_, OutcomeSettings{})) {}

FakeDevice::~FakeDevice() { throttle_end_.cancel(); }

hal::Stream& FakeDevice::create_stream(const std::string& name, double sm_fraction) {
  if (!(sm_fraction > 0 && sm_fraction <= 1)) {
    throw std::invalid_argument(source_ + ": stream '" + name + "': sm_fraction must lie in (0, 1], got " +
                                std::to_string(sm_fraction));
  }
  streams_.push_back(std::make_unique<FakeStream>(*this, name, sm_fraction));
  return *streams_.back();
}

hal::Stream& FakeDevice::create_stream_taking_turns(const std::string& name, hal::Stream& with) {
  const auto mine = std::find_if(streams_.begin(), streams_.end(), [&](const auto& s) { return s.get() == &with; });
  if (mine == streams_.end()) {
    throw std::invalid_argument(source_ + ": stream '" + name + "' cannot take turns with stream '" + with.name() +
                                "' of another device");
  }
  FakeStream& first = **mine;
  streams_.push_back(std::make_unique<FakeStream>(*this, name, with.sm_fraction()));
  streams_.back()->take_turns_with(first);
  return *streams_.back();
}

std::shared_ptr<hal::GpuEvent> FakeDevice::create_event(const std::string& name) {
  return std::make_shared<FakeEvent>(rt_, source_ + "/" + name);
}

std::shared_ptr<hal::GraphExec> FakeDevice::instantiate(const hal::Graph& graph) {
  return std::make_shared<FakeGraphExec>(graph, cost_, *profile_, id(), fast_forward_, static_cast<bool>(detail_observer_));
}

bool FakeDevice::update(hal::GraphExec& exec, const hal::Graph& graph) {
  auto* fake = dynamic_cast<FakeGraphExec*>(&exec);
  if (fake == nullptr || fake->device() != id()) {
    throw std::invalid_argument(source_ + ": graph exec '" + exec.name() + "' was not instantiated for this device");
  }
  fake->update(graph);
  return true;
}

void FakeDevice::refuse(const std::string& op, hal::Xid xid, const std::string& detail) const {
  rt_.record(source_, "op_failed", {{"op", op}, {"xid", static_cast<int>(xid)}, {"error", detail}},
             rt::Severity::warning);
  throw hal::HalError(id(), op, xid, detail);
}

void FakeDevice::refuse_unusable(const std::string& op) const {
  if (health_ == hal::DeviceHealth::needs_reset) refuse(op, hal::Xid::ecc_uncorrectable, "the device needs a reset");
  refuse(op, hal::Xid::gpu_lost, "the device is lost");
}

void FakeDevice::reset() {
  if (health_ == hal::DeviceHealth::lost) refuse("reset", hal::Xid::gpu_lost, "a lost device cannot be reset");
  if (health_ == hal::DeviceHealth::healthy) return;
  health_ = hal::DeviceHealth::healthy;
  rt_.record(source_, "reset", nlohmann::json::object());
}

void FakeDevice::fault(hal::Xid xid, int link, nlohmann::json fields, const std::string& drain_reason) {
  fields["xid"] = static_cast<int>(xid);
  fields["cause"] = std::string(hal::to_string(xid));
  rt_.record(source_, "fault", std::move(fields), rt::Severity::warning);
  // Drain before telling listeners, so that a listener failing this device's collectives finds no
  // work of it left to resume.
  if (!drain_reason.empty()) {
    for (auto& s : streams_) s->drain(xid, drain_reason);
  }
  const DeviceFault f{id(), xid, link};
  for (const auto& listener : listeners_) listener(f);
}

void FakeDevice::inject_gpu_lost() {
  if (health_ == hal::DeviceHealth::lost) return;
  health_ = hal::DeviceHealth::lost;
  hbm_->lose();
  fault(hal::Xid::gpu_lost, -1, nlohmann::json::object(), "the device fell off the bus");
}

void FakeDevice::inject_ecc_error() {
  if (health_ == hal::DeviceHealth::lost) return;
  health_ = hal::DeviceHealth::needs_reset;
  fault(hal::Xid::ecc_uncorrectable, -1, nlohmann::json::object(), "uncorrectable ECC error while running");
}

void FakeDevice::inject_nvlink_error(int link) {
  fault(hal::Xid::nvlink_error, link, {{"link", link}}, "");
}

void FakeDevice::throttle(double clock_factor, rt::Duration period) {
  if (!(clock_factor > 0 && clock_factor <= 1)) {
    throw std::invalid_argument(source_ + ": throttle clock factor must lie in (0, 1], got " +
                                std::to_string(clock_factor));
  }
  if (period <= rt::Duration()) throw std::invalid_argument(source_ + ": throttle period must be positive");
  throttle_end_.cancel();
  const double memory_factor = 1 - profile().throttle_memory_coupling * (1 - clock_factor);
  rt_.record(source_, "thermal_throttle",
             {{"clock_factor", clock_factor}, {"memory_factor", memory_factor}, {"period_ns", period.ns()}},
             rt::Severity::warning);
  compute_.set_clock(RunShares{clock_factor, memory_factor});
  throttle_end_ = rt_.call_after(period, [this] {
    rt_.record(source_, "thermal_throttle_end", nlohmann::json::object());
    compute_.set_clock(RunShares{});
  });
}

}  // namespace nvl::fakegpu
