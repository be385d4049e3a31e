// P/D KV transfer on an emulated GB300 NVL72: bytes arrive whole, the receiving GPU's link bounds the
// time (REFERENCE.md §1.1: CX8 800 Gb/s = 100 GB/s, NVLink 5 900 GB/s a direction), a dead NIC is
// routed around over NVLink.
#include <optional>

#include <gtest/gtest.h>

#include "emu/cluster/emulated_cluster.h"
#include "emu/rt/virtual_runtime.h"
#include "engine/kv/kv_transfer.h"
#include "fabric/fabric_rdma.h"

namespace nvl::engine {
namespace {

struct Pushed {
  rt::Duration took;
  std::uint64_t moved = 0;
  std::uint64_t retries = 0;
  bool ok = false;
};

Pushed push(hal::RdmaPath path, std::uint64_t bytes, const char* dead_element = nullptr) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 72);
  fabric::FabricRdma rdma(cluster.fabric());
  if (dead_element != nullptr) cluster.fabric().set_element_down(dead_element, true);
  KvTransfer transfer(rdma, {0, 1, 2, 3, 4, 5, 6, 7}, KvTransferConfig{.path = path});
  Pushed out;
  transfer.push(42, 40, bytes, [&](const hal::HalError* e) {
    out.ok = e == nullptr;
    out.took = rt.now() - rt::Time::zero();
  });
  rt.run();
  out.moved = transfer.bytes_moved();
  out.retries = transfer.retries();
  return out;
}

TEST(KvTransfer, BytesArriveWholeAndTheReceiversNicBoundsTheTime) {
  constexpr std::uint64_t kBytes = 1'000'000'000;
  const Pushed rdma = push(hal::RdmaPath::scale_out, kBytes);
  ASSERT_TRUE(rdma.ok);
  EXPECT_EQ(rdma.moved, kBytes);
  EXPECT_GE(rdma.took.seconds(), 1e9 / 100e9);       // one CX8 at line rate
  EXPECT_LE(rdma.took.seconds(), 1e9 / (0.5 * 100e9));  // and at least half of it achieved
  const Pushed nvlink = push(hal::RdmaPath::nvlink, kBytes);
  ASSERT_TRUE(nvlink.ok);
  EXPECT_GE(nvlink.took.seconds(), 1e9 / 900e9);
  EXPECT_LT(nvlink.took.seconds() * 3, rdma.took.seconds());
}

TEST(KvTransfer, ADeadNicIsRoutedAroundOverNvlink) {
  const Pushed p = push(hal::RdmaPath::scale_out, 100'000'000, "rack0/tray10/nic0");
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.moved, 100'000'000u);
  EXPECT_EQ(p.retries, 8u) << "every share failed on the NIC and went again over NVLink";
}

}  // namespace
}  // namespace nvl::engine
