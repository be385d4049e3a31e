// Streams run work in order; events order work across streams and devices; host callbacks and
// fiber synchronisation observe completion; copies take the host link or NVLink.
#include <gtest/gtest.h>

#include "emu/rt/errors.h"
#include "engine/hal/buffer.h"
#include "rig.h"

namespace nvl::fakegpu {
namespace stream_test {

using hal::DType;
using hal::KernelKind;
using testing::kernel;
using testing::Rig;

const hal::KernelDesc kBig = kernel(KernelKind::gemm, DType::fp8, 100'000'000'000ULL, 0, "big");
const hal::KernelDesc kSmall = kernel(KernelKind::elementwise, DType::bf16, 0, 50'000'000, "small");

TEST(Stream, RunsInOrderAndCallbacksSeeCompletion) {
  Rig rig("h800");
  hal::Stream& s = rig.gpu().create_stream("main");
  const auto& model = rig.gpu().cost_model();
  std::vector<rt::Time> seen;
  s.launch(kBig);
  s.add_callback([&](const hal::HalError* e) {
    EXPECT_EQ(e, nullptr);
    seen.push_back(rig.rt.now());
  });
  s.launch(kSmall);
  s.add_callback([&](const hal::HalError*) { seen.push_back(rig.rt.now()); });
  EXPECT_FALSE(s.idle());
  rig.rt.run();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], rt::Time() + model.kernel_time(kBig));
  EXPECT_EQ(seen[1], rt::Time() + model.kernel_time(kBig) + model.kernel_time(kSmall));
  EXPECT_TRUE(s.idle());
}

TEST(Stream, SynchronizeBlocksTheFiber) {
  Rig rig("h800");
  hal::Stream& s = rig.gpu().create_stream("main");
  rig.in_fiber([&] {
    s.launch(kBig);
    s.synchronize();
    EXPECT_EQ(rig.rt.now(), rt::Time() + rig.gpu().cost_model().kernel_time(kBig));
    s.synchronize();  // nothing queued: returns at once
  });
}

TEST(Stream, SynchronizeOutsideAFiberIsAUsageError) {
  Rig rig("h800");
  hal::Stream& s = rig.gpu().create_stream("main");
  s.launch(kSmall);
  EXPECT_THROW(s.synchronize(), rt::UsageError);
}

TEST(Stream, TwoStreamsOfOneDeviceRunConcurrently) {
  Rig rig("h800");
  hal::Stream& a = rig.gpu().create_stream("a");
  hal::Stream& b = rig.gpu().create_stream("b");
  a.launch(kSmall);
  b.launch(kSmall);
  rig.rt.run();
  // Both finish together, later than one alone (they share HBM), earlier than one after the other.
  const rt::Duration alone = rig.gpu().cost_model().kernel_time(kSmall);
  EXPECT_GT(rig.rt.now() - rt::Time(), alone);
  EXPECT_LT(rig.rt.now() - rt::Time(), alone * 2);
}

TEST(Stream, EventOrdersWorkAcrossDevices) {
  Rig rig("gb300", 2);
  hal::Stream& producer = rig.gpu(0).create_stream("producer");
  hal::Stream& consumer = rig.gpu(1).create_stream("consumer");
  auto ready = rig.gpu(0).create_event("ready");
  EXPECT_TRUE(ready->query()) << "never recorded";
  producer.launch(kBig);
  producer.record(*ready);
  EXPECT_FALSE(ready->query());
  consumer.wait(*ready);
  consumer.launch(kSmall);
  rt::Time consumer_done;
  consumer.add_callback([&](const hal::HalError*) { consumer_done = rig.rt.now(); });
  rig.rt.run();
  const auto& model = rig.gpu(0).cost_model();
  ASSERT_TRUE(ready->completed_at().has_value());
  EXPECT_EQ(*ready->completed_at(), rt::Time() + model.kernel_time(kBig));
  EXPECT_EQ(consumer_done, *ready->completed_at() + model.kernel_time(kSmall));
}

TEST(Stream, WaitSeesTheRecordMadeBeforeIt) {
  Rig rig("h800");
  hal::Stream& a = rig.gpu().create_stream("a");
  hal::Stream& b = rig.gpu().create_stream("b");
  auto e = rig.gpu().create_event("e");
  b.wait(*e);  // not recorded yet: passes at once
  b.launch(kSmall);
  a.launch(kBig);
  a.record(*e);
  rt::Time b_done;
  b.add_callback([&](const hal::HalError*) { b_done = rig.rt.now(); });
  rig.rt.run();
  EXPECT_LT(b_done, *e->completed_at());
}

TEST(Stream, EventSynchronizeBlocksTheFiber) {
  Rig rig("h800");
  hal::Stream& s = rig.gpu().create_stream("main");
  auto e = rig.gpu().create_event("e");
  rig.in_fiber([&] {
    s.launch(kBig);
    s.record(*e);
    e->synchronize();
    EXPECT_TRUE(e->query());
    EXPECT_EQ(rig.rt.now(), rt::Time() + rig.gpu().cost_model().kernel_time(kBig));
  });
}

// Time of one copy of `bytes` from `src` to `dst` on a stream of GPU 0.
rt::Duration copy_time(Rig& rig, const hal::Buffer& dst, const hal::Buffer& src, std::uint64_t bytes) {
  hal::Stream& s = rig.gpu(0).create_stream("copy");
  const rt::Time start = rig.rt.now();
  s.copy(dst, 0, src, 0, bytes);
  rig.rt.run();
  return rig.rt.now() - start;
}

TEST(Stream, GbClassCopiesToHostOverC2c) {
  const std::uint64_t gb = 1'000'000'000;
  Rig rig("gb300");
  hal::Buffer dev = rig.gpu().memory().allocate(gb, "kv");
  hal::Buffer host = rig.gpu().host_memory().allocate(gb, "kv_host");
  // NVLink-C2C, 450 GB/s per direction (REFERENCE.md §1.1: 900 GB/s bidirectional).
  EXPECT_NEAR(copy_time(rig, host, dev, gb).seconds(), 1.0 / 450, 1e-6);
  EXPECT_NEAR(copy_time(rig, dev, host, gb).seconds(), 1.0 / 450, 1e-6);
}

TEST(Stream, HgxClassCopiesToHostOverPcie) {
  const std::uint64_t gb = 1'000'000'000;
  Rig rig("b300");
  hal::Buffer dev = rig.gpu().memory().allocate(gb, "kv");
  hal::Buffer host = rig.gpu().host_memory().allocate(gb, "kv_host");
  // PCIe Gen6 x16, ~121 GB/s per direction (REFERENCE.md §1.1).
  EXPECT_NEAR(copy_time(rig, host, dev, gb).seconds(), 1.0 / 121, 1e-6);
}

TEST(Stream, PeerCopyUsesNvlinkWhenNoFabricIsAttached) {
  const std::uint64_t gb = 1'000'000'000;
  Rig rig("gb300", 2);
  hal::Buffer a = rig.gpu(0).memory().allocate(gb, "a");
  hal::Buffer b = rig.gpu(1).memory().allocate(gb, "b");
  EXPECT_NEAR(copy_time(rig, b, a, gb).seconds(), 1.0 / 900, 1e-6);  // REFERENCE.md §1.1: 900 GB/s per direction
}

// A transfer path that takes a fixed time per copy and remembers what it was asked.
class RecordingPath final : public TransferPath {
 public:
  explicit RecordingPath(rt::Runtime& rt) : rt_(rt) {}
  void transfer(const TransferRequest& r, TransferDone done) override {
    requests.push_back(r);
    rt_.call_after(rt::us(7), [done = std::move(done)] { done(nullptr); });
  }
  std::vector<TransferRequest> requests;

 private:
  rt::Runtime& rt_;
};

TEST(Stream, CopiesGoThroughAnAttachedTransferPath) {
  Rig rig("gb300", 2);
  RecordingPath path(rig.rt);
  rig.fleet->set_transfer_path(path);
  hal::Buffer a = rig.gpu(0).memory().allocate(4096, "a");
  hal::Buffer host = rig.gpu(1).host_memory().allocate(4096, "h");
  EXPECT_EQ(copy_time(rig, host, a, 1024), rt::us(7));
  ASSERT_EQ(path.requests.size(), 1u);
  EXPECT_EQ(path.requests[0].src, a.location());
  EXPECT_EQ(path.requests[0].dst, (hal::MemoryLocation{hal::MemoryKind::pinned_host, 0}));
  EXPECT_EQ(path.requests[0].bytes, 1024u);
  EXPECT_EQ(path.requests[0].initiator, 0);
}

TEST(Stream, CopyRangesAreChecked) {
  Rig rig("h800", 3);
  hal::Buffer a = rig.gpu(0).memory().allocate(100, "a");
  hal::Buffer b = rig.gpu(0).memory().allocate(100, "b");
  hal::Buffer far1 = rig.gpu(1).memory().allocate(100, "c");
  hal::Buffer far2 = rig.gpu(2).memory().allocate(100, "d");
  hal::Stream& s = rig.gpu(0).create_stream("s");
  EXPECT_THROW(s.copy(a, 50, b, 0, 51), std::out_of_range);
  EXPECT_THROW(s.copy(a, 0, b, 99, 2), std::out_of_range);
  EXPECT_THROW(s.copy(far1, 0, far2, 0, 10), std::invalid_argument);
  EXPECT_NO_THROW(s.copy(a, 50, b, 50, 50));
}

TEST(Stream, SmFractionMustBeAFraction) {
  Rig rig("h800");
  EXPECT_THROW(rig.gpu().create_stream("x", 0.0), std::invalid_argument);
  EXPECT_THROW(rig.gpu().create_stream("x", 1.5), std::invalid_argument);
}

}  // namespace stream_test
}  // namespace nvl::fakegpu
