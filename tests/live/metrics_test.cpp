// /metrics as vLLM's V1 engine writes it (vllm/v1/metrics/loggers.py), per engine (DP rank), read back
// by a Prometheus text parser, and checked against what the clients were answered and against the
// identities of vLLM's intervals (TTFT = queue + prefill, inference = prefill + decode, the inter-token
// latencies add up to the decode time).
#include <algorithm>
#include <chrono>
#include <future>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/live/http_test_client.h"
#include "tests/live/live_test_server.h"
#include "tests/live/prometheus_scrape.h"

namespace nvl::live_test {
namespace metrics_test {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

TEST(LiveMetrics, EveryEngineReportsUnderVllmNamesAndTheFiguresAddUp) {
  auto server = start_server();
  const std::uint16_t port = server->http_port();
  const std::string model = server->engine().model_name();
  const std::vector<std::pair<std::string, int>> asks = {
      {"a short question", 5}, {std::string(3000, 'x') + " and a longer one", 17}, {"a third", 9}};
  std::int64_t prompt_tokens = 0, output_tokens = 0, max_tokens = 0;
  for (const auto& [prompt, n] : asks) {
    const auto r = post_json(port, "/v1/completions", {{"model", model}, {"prompt", prompt}, {"max_tokens", n}});
    ASSERT_EQ(r.status, 200) << r.body;
    prompt_tokens += r.json()["usage"]["prompt_tokens"].get<std::int64_t>();
    output_tokens += r.json()["usage"]["completion_tokens"].get<std::int64_t>();
    max_tokens += n;
  }
  const std::string text = get(port, "/metrics").body;
  const std::vector<PromSample> samples = parse_prometheus(text);

  // Every vLLM sample names the model and its engine; there is one engine per DP rank (live.json: 8,
  // engines 0-7) and one per prefill instance after them (live.json: 1, engine 8).
  std::set<std::string> engines;
  for (const PromSample& s : samples) {
    if (s.name.rfind("vllm:", 0) != 0) continue;
    if (s.name != "vllm:cache_config_info") {
      EXPECT_EQ(s.labels.at("model_name"), model) << s.name;
    }
    ASSERT_TRUE(s.labels.contains("engine")) << s.name;
    engines.insert(s.labels.at("engine"));
    // Counters, counts and buckets are exact integers (no "2.2622e+06").
    if (ends_with(s.name, "_total") || ends_with(s.name, "_count") || ends_with(s.name, "_bucket")) {
      EXPECT_EQ(s.value.find_first_of(".e"), std::string::npos) << s.name << " " << s.value;
    }
  }
  EXPECT_EQ(engines, (std::set<std::string>{"0", "1", "2", "3", "4", "5", "6", "7", "8"}));
  // Today's names, not the ones vLLM deprecated.
  EXPECT_EQ(text.find("vllm:gpu_cache_usage_perc"), std::string::npos);
  EXPECT_EQ(text.find("vllm:time_per_output_token_seconds"), std::string::npos);
  for (const char* name : {"vllm:kv_cache_usage_perc", "vllm:num_preemptions_total", "vllm:cache_config_info"}) {
    const auto on_engine_7 = [&](const PromSample& s) { return s.name == name && s.labels.at("engine") == "7"; };
    EXPECT_EQ(std::count_if(samples.begin(), samples.end(), on_engine_7), 1) << name;
  }
  // Bucket bounds as prometheus_client prints them.
  EXPECT_NE(text.find("le=\"0.001\""), std::string::npos);
  EXPECT_NE(text.find("le=\"1.0\""), std::string::npos);
  EXPECT_NE(text.find("le=\"100000.0\""), std::string::npos) << "token buckets up to the context length";

  // What the clients were told, counted once each.
  EXPECT_EQ(metric_total(samples, "vllm:request_success_total", {{"finished_reason", "length"}}), 3);
  EXPECT_EQ(metric_total(samples, "vllm:request_success_total", {{"finished_reason", "abort"}}), 0);
  EXPECT_EQ(metric_total(samples, "vllm:prompt_tokens_total"), static_cast<double>(prompt_tokens));
  EXPECT_EQ(metric_total(samples, "vllm:generation_tokens_total"), static_cast<double>(output_tokens));
  EXPECT_EQ(metric_total(samples, "vllm:request_prompt_tokens_sum"), static_cast<double>(prompt_tokens));
  EXPECT_EQ(metric_total(samples, "vllm:request_generation_tokens_sum"), static_cast<double>(output_tokens));
  EXPECT_EQ(metric_total(samples, "vllm:request_params_max_tokens_sum"), static_cast<double>(max_tokens));
  EXPECT_EQ(metric_total(samples, "vllm:request_prompt_tokens_count"), 3);
  EXPECT_EQ(metric_total(samples, "vllm:e2e_request_latency_seconds_count"), 3);

  // vLLM's intervals: TTFT is queue then prefill; inference is prefill then decode; one inter-token
  // latency per step after the first (one token each: live.json has no MTP), adding up to the decode.
  const auto sum = [&](const std::string& name) { return metric_total(samples, name + "_sum"); };
  const double ttft = sum("vllm:time_to_first_token_seconds");
  EXPECT_GT(ttft, 0);
  EXPECT_NEAR(ttft, sum("vllm:request_queue_time_seconds") + sum("vllm:request_prefill_time_seconds"), 1e-9);
  EXPECT_NEAR(sum("vllm:request_inference_time_seconds"),
              sum("vllm:request_prefill_time_seconds") + sum("vllm:request_decode_time_seconds"), 1e-9);
  EXPECT_NEAR(sum("vllm:inter_token_latency_seconds"), sum("vllm:request_decode_time_seconds"), 1e-9);
  EXPECT_EQ(metric_total(samples, "vllm:inter_token_latency_seconds_count"), static_cast<double>(output_tokens - 3));
  EXPECT_GE(sum("vllm:e2e_request_latency_seconds") + 1e-9,
            sum("vllm:request_queue_time_seconds") + sum("vllm:request_inference_time_seconds"));
  // The per-request mean time per output token: decode time over the tokens after the first.
  EXPECT_GT(sum("vllm:request_time_per_output_token_seconds"), 0);
}

// A client that goes away: the server counts a cancel at once, the engine an "abort" once stopped.
TEST(LiveMetrics, ACancelledRequestIsAnAbortOnItsEngine) {
  auto server = start_server();
  auto& engine = server->engine();
  std::promise<void> first;
  bool told = false;
  const auto a = engine.submit_text("keep talking", 100000, [&](const emu::live::StreamUpdate& u) {
    if (u.new_tokens > 0 && !told) {
      told = true;
      first.set_value();
    }
  });
  ASSERT_EQ(a.refusal, emu::live::Refusal::none) << a.detail;
  first.get_future().wait();
  engine.cancel(a.id);
  const auto aborted = [&] {
    return metric_total(get(server->http_port(), "/metrics").body, "vllm:request_success_total",
                        {{"finished_reason", "abort"}});
  };
  for (int i = 0; i < 100 && aborted() < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::string text = get(server->http_port(), "/metrics").body;
  EXPECT_EQ(metric_total(text, "vllm:request_success_total", {{"finished_reason", "abort"}}), 1);
  EXPECT_EQ(metric_total(text, "nvl72emu:request_cancelled_total"), 1);
  EXPECT_EQ(metric_total(text, "vllm:request_success_total", {{"finished_reason", "length"}}), 0);
  EXPECT_EQ(metric_total(text, "vllm:time_to_first_token_seconds_count"), 1);
}

// A lost GPU takes its engine out of service, as that engine's figures say. live.json: DP ranks on GPUs
// 0-7 (engines 0-7), its prefill instance engine 8; the rank counts are over DP ranks only.
TEST(LiveMetrics, ALostGpuShowsOnItsEngine) {
  auto server = start_server();
  const std::uint16_t port = server->http_port();
  ASSERT_EQ(post_json(port, "/admin/fault", {{"kind", "gpu_lost"}, {"target", 2}}).status, 200);
  const auto healthy = [&] { return metric_total(get(port, "/metrics").body, "nvl72emu:engine_healthy"); };
  for (int i = 0; i < 100 && healthy() > 8; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::vector<PromSample> samples = parse_prometheus(get(port, "/metrics").body);
  EXPECT_EQ(metric_total(samples, "nvl72emu:engine_healthy", {{"engine", "2"}}), 0);
  EXPECT_EQ(metric_total(samples, "nvl72emu:engine_healthy", {{"engine", "8"}}), 1);
  EXPECT_EQ(metric_total(samples, "nvl72emu:engine_healthy"), 8);
  EXPECT_EQ(metric_total(samples, "nvl72emu:healthy_engines"), 7);
  EXPECT_EQ(metric_total(samples, "nvl72emu:engines"), 8);
  EXPECT_EQ(metric_total(samples, "nvl72emu:faults_injected_total"), 1);
}

}  // namespace metrics_test
}  // namespace nvl::live_test
