#include <sstream>

#include <gtest/gtest.h>

#include "emu/rt/rng.h"
#include "emu/rt/virtual_runtime.h"

namespace nvl::rt {
namespace rng_event_log_test {

TEST(Rng, StreamsAreIndependentOfEachOther) {
  std::uint64_t router_first = 0, workload_first = 0, router_after_other = 0, router_other_seed = 0;
  {
    VirtualRuntime a(LoopOptions{.seed = 42});
    router_first = a.rng("router").next_u64();
    workload_first = a.rng("workload").next_u64();
  }
  {
    VirtualRuntime b(LoopOptions{.seed = 42});
    b.rng("new-stream").next_u64();  // another stream drawn first changes nothing for "router"
    router_after_other = b.rng("router").next_u64();
  }
  {
    VirtualRuntime c(LoopOptions{.seed = 43});
    router_other_seed = c.rng("router").next_u64();
  }
  EXPECT_EQ(router_after_other, router_first);
  EXPECT_NE(workload_first, router_first);
  EXPECT_NE(router_other_seed, router_first);
}

TEST(Rng, DistributionsStayInRangeWithTheRightMoments) {
  Rng r(Rng::derive_seed(1, "moments"));
  double sum = 0, sum_exp = 0, sum_n = 0, sum_n2 = 0;
  constexpr int kN = 200'000;
  for (int i = 0; i < kN; ++i) {
    const double u = r.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    sum_exp += r.exponential(3.0);
    const double n = r.normal(10.0, 2.0);
    sum_n += n;
    sum_n2 += n * n;
    const auto k = r.uniform_int(-3, 3);
    ASSERT_GE(k, -3);
    ASSERT_LE(k, 3);
  }
  EXPECT_NEAR(sum / kN, 0.5, 0.01);
  EXPECT_NEAR(sum_exp / kN, 3.0, 0.05);
  EXPECT_NEAR(sum_n / kN, 10.0, 0.05);
  EXPECT_NEAR(sum_n2 / kN - (sum_n / kN) * (sum_n / kN), 4.0, 0.1);
  EXPECT_THROW(r.uniform_int(2, 1), std::invalid_argument);
}

TEST(EventLog, HashCoversEveryFieldAndCountsErrors) {
  EventLog a, b, c;
  a.keep_records(true);
  for (EventLog* l : {&a, &b}) {
    l->record(Time::from_ns(5), "gpu3", "kernel_done", {{"name", "gemm"}});
    l->record(Time::from_ns(9), "checker", "kv_leak", {{"blocks", 2}}, Severity::error);
  }
  c.record(Time::from_ns(5), "gpu3", "kernel_done", {{"name", "gemm"}});
  c.record(Time::from_ns(9), "checker", "kv_leak", {{"blocks", 3}}, Severity::error);
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_NE(a.hash(), c.hash());
  EXPECT_EQ(a.hash_hex().size(), 16u);
  EXPECT_EQ(a.count(), 2u);
  EXPECT_EQ(a.error_count(), 1u);
  ASSERT_TRUE(a.first_error().has_value());
  EXPECT_NE(a.first_error()->find("kv_leak"), std::string::npos);
  std::ostringstream out;
  a.write_jsonl(out);
  EXPECT_EQ(out.str(),
            "{\"fields\":{\"name\":\"gemm\"},\"kind\":\"kernel_done\",\"severity\":\"info\",\"source\":\"gpu3\","
            "\"t_ns\":5}\n"
            "{\"fields\":{\"blocks\":2},\"kind\":\"kv_leak\",\"severity\":\"error\",\"source\":\"checker\","
            "\"t_ns\":9}\n");
}

TEST(EventLog, CountRecordsHashTheirTimeAndValuesAndStreamAsTheyAreKept) {
  EventLog kept, plain, later, more;
  std::ostringstream streamed;
  kept.keep_records(true);
  plain.stream_to(&streamed);
  for (EventLog* l : {&kept, &plain}) {
    l->record_counts(Time::from_ns(7), "client", "tokens", {{"request", 4}, {"count", 3}});
    l->record(Time::from_ns(8), "client", "done", {{"request", 4}});
  }
  // One nanosecond later, or one token more: another hash.
  later.record_counts(Time::from_ns(8), "client", "tokens", {{"request", 4}, {"count", 3}});
  more.record_counts(Time::from_ns(7), "client", "tokens", {{"request", 4}, {"count", 4}});
  EventLog first;
  first.record_counts(Time::from_ns(7), "client", "tokens", {{"request", 4}, {"count", 3}});
  EXPECT_NE(later.hash(), first.hash());
  EXPECT_NE(more.hash(), first.hash());
  EXPECT_NE(first.hash(), EventLog().hash());
  EXPECT_EQ(kept.hash(), plain.hash()) << "keeping or streaming lines leaves the hash alone";
  EXPECT_EQ(kept.count(), 2u);
  std::ostringstream written;
  kept.write_jsonl(written);
  EXPECT_EQ(written.str(),
            "{\"fields\":{\"count\":3,\"request\":4},\"kind\":\"tokens\",\"severity\":\"info\",\"source\":\"client\","
            "\"t_ns\":7}\n"
            "{\"fields\":{\"request\":4},\"kind\":\"done\",\"severity\":\"info\",\"source\":\"client\",\"t_ns\":8}\n");
  EXPECT_EQ(streamed.str(), written.str());
  EXPECT_TRUE(plain.lines().empty()) << "streamed, not kept";
}

TEST(EventLog, RuntimeRecordStampsVirtualTime) {
  VirtualRuntime rt;
  rt.log().keep_records(true);
  rt.call_after(ns(1234), [&] { rt.record("router", "routed", {{"rank", 3}}); });
  rt.run();
  ASSERT_EQ(rt.log().lines().size(), 1u);
  EXPECT_NE(rt.log().lines()[0].find("\"t_ns\":1234"), std::string::npos);
}

}  // namespace rng_event_log_test
}  // namespace nvl::rt
