// Exact accounting of HBM and pinned host memory; refused allocations say what was asked and free.
#include <gtest/gtest.h>

#include "engine/hal/buffer.h"
#include "engine/hal/hal_error.h"
#include "rig.h"

namespace nvl::fakegpu {
namespace memory_test {

using testing::Rig;

TEST(Memory, AccountsExactlyAndFreesOnRelease) {
  Rig rig("h800");
  hal::Memory& hbm = rig.gpu().memory();
  EXPECT_EQ(hbm.capacity_bytes(), rig.fleet->profile().hbm_usable_bytes);
  EXPECT_EQ(hbm.used_bytes(), 0u);
  {
    hal::Buffer a = hbm.allocate(1000, "a");
    hal::Buffer b = hbm.allocate(24, "b");
    EXPECT_EQ(hbm.used_bytes(), 1024u);
    EXPECT_EQ(rig.gpu().memory().used_bytes(), 1024u);
    EXPECT_EQ(a.bytes(), 1000u);
    EXPECT_EQ(a.location(), (hal::MemoryLocation{hal::MemoryKind::device, 0}));
    hal::Buffer moved = std::move(a);
    EXPECT_FALSE(a);
    EXPECT_EQ(hbm.used_bytes(), 1024u);
    moved.reset();
    EXPECT_EQ(hbm.used_bytes(), 24u);
  }
  EXPECT_EQ(hbm.used_bytes(), 0u);
}

TEST(Memory, FillsToCapacityExactlyAndNotOneByteMore) {
  Rig rig("h800");
  hal::Memory& hbm = rig.gpu().memory();
  hal::Buffer most = hbm.allocate(hbm.capacity_bytes() - 10, "weights");
  hal::Buffer rest = hbm.allocate(10, "rest");
  EXPECT_EQ(hbm.free_bytes(), 0u);
  rest.reset();
  try {
    hbm.allocate(11, "kv");
    FAIL() << "expected HalError";
  } catch (const hal::HalError& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.device(), 0);
    EXPECT_EQ(e.cause(), hal::Xid::none);
    EXPECT_NE(m.find("asked for 11 bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("only 10 of"), std::string::npos) << m;
    EXPECT_NE(m.find("'kv'"), std::string::npos) << m;
  }
  EXPECT_EQ(hbm.used_bytes(), hbm.capacity_bytes() - 10);
  EXPECT_EQ(rig.count("alloc_failed"), 1);
}

TEST(Memory, GraceIsSharedByTwoGpusOnGbTrays) {
  Rig rig("gb300", 4);
  EXPECT_EQ(rig.fleet->host_count(), 2);
  hal::Buffer a = rig.gpu(0).host_memory().allocate(100, "a");
  EXPECT_EQ(rig.gpu(1).host_memory().used_bytes(), 100u) << "GPUs 0 and 1 share a Grace";
  EXPECT_EQ(rig.gpu(2).host_memory().used_bytes(), 0u) << "GPU 2 sits on the next Grace";
  EXPECT_EQ(rig.fleet->host_memory(0).live_allocations(), 1u);
  EXPECT_EQ(rig.gpu(2).info().host, 1);
  EXPECT_EQ(a.location(), (hal::MemoryLocation{hal::MemoryKind::pinned_host, 0}));
  EXPECT_EQ(rig.gpu(0).host_memory().capacity_bytes(), 480'000'000'000u);
}

TEST(Memory, HgxNodeHostIsSharedByEightGpus) {
  Rig rig("h100", 9);
  EXPECT_EQ(rig.fleet->host_count(), 2);
  EXPECT_EQ(rig.gpu(7).info().host, 0);
  EXPECT_EQ(rig.gpu(8).info().host, 1);
}

TEST(Memory, PinnedHostRefusalNamesTheHost) {
  Rig rig("gb200", 2);
  hal::Memory& host = rig.gpu(1).host_memory();
  try {
    host.allocate(host.capacity_bytes() + 1, "kv_tier");
    FAIL() << "expected HalError";
  } catch (const hal::HalError& e) {
    EXPECT_EQ(e.device(), -1);
    EXPECT_NE(std::string(e.what()).find("host0"), std::string::npos) << e.what();
  }
}

}  // namespace memory_test
}  // namespace nvl::fakegpu
