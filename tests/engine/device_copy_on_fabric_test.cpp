// Device copies in an assembled cluster are fabric flows: two GPUs spilling to the Grace they share
// split its C2C link (REFERENCE.md §1.1: 900 GB/s bidirectional per Grace, shared by its two GPUs).
#include <gtest/gtest.h>

#include "emu/cluster/emulated_cluster.h"
#include "emu/rt/virtual_runtime.h"

namespace nvl::emu {
namespace {

rt::Duration spill(int gpus) {
  rt::VirtualRuntime rt;
  EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 4);
  std::vector<hal::Buffer> keep;
  rt::Time last;
  for (int g = 0; g < gpus; ++g) {
    hal::Device& d = cluster.fleet().device(g);
    keep.push_back(d.memory().allocate(10'000'000'000, "kv"));
    keep.push_back(d.host_memory().allocate(10'000'000'000, "grace kv"));
    hal::Stream& s = d.create_stream("spill");
    s.copy(keep[keep.size() - 1], 0, keep[keep.size() - 2], 0, 10'000'000'000);
    s.add_callback([&](const hal::HalError* e) {
      EXPECT_EQ(e, nullptr);
      last = std::max(last, rt.now());
    });
  }
  rt.run();
  return last - rt::Time::zero();
}

TEST(DeviceCopyOnFabric, TwoGpusSpillingToOneGraceShareItsC2c) {
  const rt::Duration one = spill(1);
  const rt::Duration two = spill(2);  // GPUs 0 and 1 share the tray's first Grace
  EXPECT_GE(one.seconds(), 10e9 / 450e9);  // one direction of C2C
  EXPECT_GT(two.seconds(), 1.8 * one.seconds());
}

}  // namespace
}  // namespace nvl::emu
