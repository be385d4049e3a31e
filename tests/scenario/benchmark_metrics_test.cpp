// The benchmark figures against a hand-computed case: two requests with known token times, one failed
// request and one warm-up request, as the recorder sees them from the serving system's callbacks.
#include <gtest/gtest.h>

#include "emu/report/benchmark_metrics.h"
#include "emu/report/benchmark_recorder.h"

namespace nvl::emu {
namespace benchmark_metrics_test {

rt::Time at_ms(std::int64_t v) { return rt::Time::zero() + rt::ms(v); }

engine::RequestTiming done(engine::RequestId id, std::int64_t sent_ms, std::int64_t first_ms, std::int64_t last_ms,
                           std::int64_t output) {
  engine::RequestTiming t;
  t.id = id;
  t.arrival = at_ms(sent_ms);
  t.first_token = at_ms(first_ms);
  t.finished = at_ms(last_ms);
  t.prompt_tokens = 1000;
  t.output_tokens = output;
  return t;
}

BenchmarkRecorder hand_made_run() {
  BenchmarkRecorder r;
  // A: sent at 0, tokens at 100, 120, 140, 160 ms.
  r.on_submit(1, at_ms(0), false);
  for (std::int64_t t : {100, 120, 140, 160}) r.on_tokens(1, 1, at_ms(t));
  r.on_done(done(1, 0, 100, 160, 4), at_ms(160));
  // B: sent at 50, its first token at 250, then two at once (MTP) at 290 and the last at 300.
  r.on_submit(2, at_ms(50), false);
  r.on_tokens(2, 1, at_ms(250));
  r.on_tokens(2, 2, at_ms(290));
  r.on_tokens(2, 1, at_ms(300));
  r.on_done(done(2, 50, 250, 300, 4), at_ms(300));
  // C: sent at 10, fails at 400 after one token.
  r.on_submit(3, at_ms(10), false);
  r.on_tokens(3, 1, at_ms(200));
  engine::RequestTiming c;
  c.id = 3;
  c.failure = "kv transfer failed";
  r.on_done(c, at_ms(400));
  // A warm-up request: counted, otherwise ignored.
  r.on_submit(4, at_ms(0), true);
  r.on_tokens(4, 1, at_ms(5));
  r.on_done(done(4, 0, 5, 5, 1), at_ms(5));
  return r;
}

TEST(BenchmarkMetrics, NumpyPercentilesInterpolateLinearly) {
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 90), 3.7);  // rank 0.9 x 3 = 2.7 between 3 and 4
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile({7}, 99), 7);
  EXPECT_DOUBLE_EQ(percentile({}, 50), 0);
}

TEST(BenchmarkMetrics, CountedValuesGiveNumpysFiguresOfTheValuesRepeated) {
  // 10 x 3, 20 x 1, 30 x 2: sorted 10 10 10 20 30 30; median between ranks 2 and 3 (10 and 20) = 15;
  // p90 at rank 4.5 between 30 and 30; mean 110 / 6.
  const Distribution d = distribution(ItlCounts{{10, 3}, {20, 1}, {30, 2}});
  EXPECT_EQ(d.count, 6u);
  EXPECT_DOUBLE_EQ(d.mean, 110.0 / 6);
  EXPECT_DOUBLE_EQ(d.median, 15);
  EXPECT_DOUBLE_EQ(d.p90, 30);
  const Distribution same = distribution(std::vector<double>{30, 10, 20, 10, 30, 10});
  EXPECT_DOUBLE_EQ(same.median, d.median);
  EXPECT_DOUBLE_EQ(same.p99, d.p99);
  EXPECT_EQ(distribution(ItlCounts{}).count, 0u);
}

TEST(BenchmarkMetrics, TheHandComputedCase) {
  const BenchmarkRecorder rec = hand_made_run();
  EXPECT_EQ(rec.warmup_requests(), 1u);
  ASSERT_EQ(rec.samples().size(), 3u);
  const BenchmarkMetrics m = benchmark_metrics(rec.samples(), rec.itl_ms(), 4);
  EXPECT_EQ(m.completed, 2u);
  EXPECT_EQ(m.failed, 1u);
  // First send 0 ms to the last request over (C's failure) at 400 ms.
  EXPECT_DOUBLE_EQ(m.duration_s, 0.4);
  // TTFT 100 and 200 ms.
  EXPECT_DOUBLE_EQ(m.ttft_ms.mean, 150);
  EXPECT_DOUBLE_EQ(m.ttft_ms.median, 150);
  EXPECT_NEAR(m.ttft_ms.p90, 190, 1e-9);
  EXPECT_NEAR(m.ttft_ms.p99, 199, 1e-9);
  // TPOT: A (160 - 100) / 3 = 20, B (300 - 250) / 3 = 16.67.
  EXPECT_EQ(m.tpot_ms.count, 2u);
  EXPECT_NEAR(m.tpot_ms.mean, (20 + 50.0 / 3) / 2, 1e-9);
  // ITL: A 20, 20, 20; B 20, 20 (the 40 ms wait split over two tokens), 10.
  EXPECT_EQ(m.itl_ms.count, 6u);
  EXPECT_NEAR(m.itl_ms.mean, 110.0 / 6, 1e-9);
  EXPECT_NEAR(m.itl_ms.median, 20, 1e-9);
  // E2E 160 and 250 ms.
  EXPECT_NEAR(m.e2e_ms.mean, 205, 1e-9);
  EXPECT_NEAR(m.e2e_ms.p90, 241, 1e-9);
  // 2 requests and 8 output tokens over 0.4 s, on 4 GPUs.
  EXPECT_NEAR(m.request_throughput_per_s, 5, 1e-9);
  EXPECT_NEAR(m.output_tokens_per_s, 20, 1e-9);
  EXPECT_NEAR(m.output_tokens_per_s_per_gpu, 5, 1e-9);
  EXPECT_NEAR(m.input_tokens_per_s, 5000, 1e-6);
  // Per user: A 3 tokens in 60 ms = 50/s, B 3 in 50 ms = 60/s.
  EXPECT_NEAR(m.output_tokens_per_s_per_user, 55, 1e-9);
}

TEST(BenchmarkMetrics, AOneTokenRequestHasNoTpot) {
  BenchmarkSample s;
  s.sent = at_ms(0);
  s.first_token = s.finished = s.over = at_ms(30);
  s.output_tokens = 1;
  const BenchmarkMetrics m = benchmark_metrics(std::vector<BenchmarkSample>{s}, {}, 1);
  EXPECT_EQ(m.tpot_ms.count, 0u);
  EXPECT_EQ(m.ttft_ms.count, 1u);
  EXPECT_DOUBLE_EQ(m.output_tokens_per_s_per_user, 0);
}

}  // namespace benchmark_metrics_test
}  // namespace nvl::emu
