#pragma once
// A virtual runtime with a fleet of emulated GPUs, for the tests.
#include <functional>
#include <memory>
#include <string>

#include "emu/rt/virtual_runtime.h"
#include "fakegpu/gpu_fleet.h"

namespace nvl::fakegpu::testing {

struct Rig {
  explicit Rig(const std::string& profile, int gpus = 1) {
    rt.log().keep_records(true);
    fleet = GpuFleet::load(rt, profile, gpus);
  }
  FakeDevice& gpu(int i = 0) { return fleet->device(i); }
  // Runs `body` in a fiber until the run goes quiet.
  void in_fiber(std::function<void()> body) {
    rt.spawn("test", std::move(body));
    rt.run();
  }
  // Event-log lines whose kind is `kind`.
  int count(const std::string& kind) const {
    int n = 0;
    for (const auto& l : const_cast<rt::VirtualRuntime&>(rt).log().lines()) {
      if (l.find("\"kind\":\"" + kind + "\"") != std::string::npos) ++n;
    }
    return n;
  }

  rt::VirtualRuntime rt;
  std::unique_ptr<GpuFleet> fleet;
};

inline hal::KernelDesc kernel(hal::KernelKind kind, hal::DType dtype, std::uint64_t flops, std::uint64_t bytes,
                              std::string name = "k") {
  return hal::KernelDesc{kind, dtype, flops, bytes, std::move(name), {}};
}

}  // namespace nvl::fakegpu::testing
