// The Prometheus text writer: numbers as vLLM's prometheus_client prints them, label escapes,
// cumulative histogram buckets, vLLM's 1-2-5 token buckets.
#include <limits>

#include <gtest/gtest.h>

#include "emu/live/prometheus_text.h"

namespace nvl::emu::live {
namespace prometheus_text_test {

TEST(PrometheusText, NumbersReadAsPythonPrintsThem) {
  EXPECT_EQ(python_float(1.0), "1.0");
  EXPECT_EQ(python_float(0.25), "0.25");
  EXPECT_EQ(python_float(100000.0), "100000.0");
  EXPECT_EQ(python_float(1e-05), "1e-05");
  EXPECT_EQ(python_float(0.0001), "0.0001");
  EXPECT_EQ(python_float(1e16), "1e+16");
  EXPECT_EQ(python_float(0.0), "0.0");
  EXPECT_EQ(python_float(0.1 + 0.2), "0.30000000000000004");  // exact: reads back to the same double
  EXPECT_EQ(python_float(std::numeric_limits<double>::infinity()), "+Inf");
}

TEST(PrometheusText, OneTwoFiveBucketsStopAtTheLimit) {
  EXPECT_EQ(one_two_five_buckets(100), (std::vector<double>{1, 2, 5, 10, 20, 50, 100}));
  EXPECT_EQ(one_two_five_buckets(163840).back(), 100000);
  EXPECT_EQ(one_two_five_buckets(163840).size(), 16u);
}

TEST(PrometheusText, SamplesAndHistograms) {
  PrometheusText t;
  t.family("x:requests_total", "counter", "Requests.");
  t.sample("x:requests_total", {{"model_name", "a\"b\\c\nd"}, {"engine", "0"}}, std::uint64_t{2262200});
  t.histogram("x:ttft_seconds", {{"engine", "1"}}, {0.5, 1.0}, {2, 1}, 4, 3.25);
  EXPECT_EQ(t.text(),
            "# HELP x:requests_total Requests.\n"
            "# TYPE x:requests_total counter\n"
            "x:requests_total{model_name=\"a\\\"b\\\\c\\nd\",engine=\"0\"} 2262200\n"
            "x:ttft_seconds_bucket{engine=\"1\",le=\"0.5\"} 2\n"
            "x:ttft_seconds_bucket{engine=\"1\",le=\"1.0\"} 3\n"
            "x:ttft_seconds_bucket{engine=\"1\",le=\"+Inf\"} 4\n"
            "x:ttft_seconds_sum{engine=\"1\"} 3.25\n"
            "x:ttft_seconds_count{engine=\"1\"} 4\n");
}

}  // namespace prometheus_text_test
}  // namespace nvl::emu::live
