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
namespace kv_transfer_test {

struct Pushed {
  rt::Duration took;
  std::uint64_t moved = 0;
  std::uint64_t retries = 0;
  std::int64_t push_retries = 0;
  bool ok = false;
};

Pushed push(hal::RdmaPath path, std::uint64_t bytes, const char* dead_element = nullptr,
            rt::Duration timeout = KvTransferConfig{}.timeout) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 72);
  fabric::FabricRdma rdma(cluster.fabric());
  if (dead_element != nullptr) cluster.fabric().set_element_down(dead_element, true);
  KvTransfer transfer(rdma, {0, 1, 2, 3, 4, 5, 6, 7}, KvTransferConfig{.path = path, .region_bytes = 1ULL << 40, .timeout = timeout});
  Pushed out;
  transfer.push(42, 40, bytes, [&](const hal::HalError* e, std::int64_t retries) {
    out.ok = e == nullptr;
    out.push_retries = retries;
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
  EXPECT_EQ(p.push_retries, 8);
}

TEST(KvTransfer, AWriteSlowerThanTheTimeoutGoesAgainOverTheOtherPath) {
  // 1 GB over one CX8 takes at least 10 ms; over NVLink about 1.1 ms. A 5 ms timeout gives up on the
  // NICs and the retry over NVLink lands soon after.
  constexpr std::uint64_t kBytes = 1'000'000'000;
  const Pushed p = push(hal::RdmaPath::scale_out, kBytes, nullptr, rt::ms(5));
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.retries, 8u);
  EXPECT_EQ(p.moved, kBytes) << "only the writes that landed in time count";
  EXPECT_GE(p.took.seconds(), 5e-3 + 1e9 / 900e9);
  EXPECT_LE(p.took.seconds(), 5e-3 + 1e9 / (0.5 * 900e9));
  // Neither path in time: the push fails, after one retry of each share.
  const Pushed stuck = push(hal::RdmaPath::scale_out, kBytes, nullptr, rt::us(100));
  EXPECT_FALSE(stuck.ok);
  EXPECT_EQ(stuck.moved, 0u);
}

}  // namespace kv_transfer_test
}  // namespace nvl::engine
