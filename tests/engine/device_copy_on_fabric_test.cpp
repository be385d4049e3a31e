// Device copies in an assembled cluster are fabric flows over C2C (REFERENCE.md §1.1, §5): each GPU's
// own C2C link, at the rates nvbandwidth measures per GPU on GB200 (201 GB/s host to device, 193 device to
// host), and the Grace's memory (~500 GB/s, read and write together) that both its GPUs' copies share.
#include <gtest/gtest.h>

#include "emu/cluster/emulated_cluster.h"
#include "emu/rt/virtual_runtime.h"

namespace nvl::emu {
namespace device_copy_on_fabric_test {

constexpr std::uint64_t kBytes = 10'000'000'000;

// Each of `gpus` (GPUs 0.. of the first tray: 0 and 1 share grace0) copies kBytes to its Grace
// (`offload`) and/or from it (`load`) at once; returns when the last copy is done.
rt::Duration copies(int gpus, bool offload, bool load) {
  rt::VirtualRuntime rt;
  EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 4);
  std::vector<hal::Buffer> keep;
  keep.reserve(2 * static_cast<std::size_t>(gpus));  // the copies hold references into it
  rt::Time last;
  for (int g = 0; g < gpus; ++g) {
    hal::Device& d = cluster.fleet().device(g);
    const hal::Buffer& hbm = keep.emplace_back(d.memory().allocate(2 * kBytes, "kv"));
    const hal::Buffer& grace = keep.emplace_back(d.host_memory().allocate(2 * kBytes, "grace kv"));
    const auto run = [&](hal::Stream& s, const hal::Buffer& dst, const hal::Buffer& src) {
      s.copy(dst, 0, src, 0, kBytes);
      s.add_callback([&](const hal::HalError* e) {
        EXPECT_EQ(e, nullptr);
        last = std::max(last, rt.now());
      });
    };
    if (offload) run(d.create_stream("offload"), grace, hbm);
    if (load) run(d.create_stream("load"), hbm, grace);
  }
  rt.run();
  return last - rt::Time::zero();
}

TEST(DeviceCopyOnFabric, OneGpuCopiesAtTheMeasuredC2cRates) {
  // 10 GB at 193 GB/s is 51.8 ms; at 201 GB/s 49.8 ms (plus a few us of latency and overhead).
  EXPECT_NEAR(copies(1, true, false).seconds(), kBytes / 193e9, 0.001);
  EXPECT_NEAR(copies(1, false, true).seconds(), kBytes / 201e9, 0.001);
  // Both ways at once on one GPU: each direction has its own link; 394 GB/s of Grace memory < 500.
  EXPECT_NEAR(copies(1, true, true).seconds(), kBytes / 193e9, 0.001);
}

TEST(DeviceCopyOnFabric, TwoGpusOfOneGraceShareItsMemoryNotEachOthersLinks) {
  // Both GPUs offloading: two links of 225 GB/s (wire) each, 450 < 500 of memory: no slowdown.
  EXPECT_NEAR(copies(2, true, false).seconds(), kBytes / 193e9, 0.001);
  // Both GPUs loading and offloading at once: four flows of 225 GB/s on the wire want 900 of the
  // Grace's 500, so max-min gives each 125 on the wire. The loads (10 GB / 0.8933 = 11.19 GB on the
  // wire) end at 89.5 ms; the offloads (11.66 GB on the wire) then have their links: their last 0.47 GB
  // at 225 GB/s, done at 91.6 ms, against 51.8 ms alone: 1.77x.
  const double alone = copies(1, true, true).seconds();
  EXPECT_NEAR(copies(2, true, true).seconds() / alone, 1.77, 0.02);
}

}  // namespace device_copy_on_fabric_test
}  // namespace nvl::emu
