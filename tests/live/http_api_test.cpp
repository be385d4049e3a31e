// The OpenAI-compatible HTTP server against a real client (Beast) on loopback.
#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "emu/live/prompt_estimate.h"
#include "tests/live/http_test_client.h"
#include "tests/live/live_test_server.h"
#include "tests/live/prometheus_scrape.h"

namespace nvl::live_test {
namespace http_api_test {

using boost::beast::http::verb;

class HttpApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = start_server().release(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static std::uint16_t port() { return server_->http_port(); }
  static const std::string& model() { return server_->engine().model_name(); }
  static emu::live::LiveServer* server_;
};
emu::live::LiveServer* HttpApi::server_ = nullptr;

TEST_F(HttpApi, CompletionCountsUsageAndWords) {
  const std::string prompt = "Write a haiku about NVLink switches and their many lanes.";
  const auto r = post_json(port(), "/v1/completions", {{"model", model()}, {"prompt", prompt}, {"max_tokens", 12}});
  ASSERT_EQ(r.status, 200) << r.body;
  const auto j = r.json();
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(word_count(j["choices"][0]["text"].get<std::string>()), 12);
  // ~4 bytes per token, rounded up (prompt_estimate.h).
  const auto expected_prompt = static_cast<std::int64_t>((prompt.size() + 3) / 4);
  EXPECT_EQ(j["usage"]["prompt_tokens"], expected_prompt);
  EXPECT_EQ(j["usage"]["completion_tokens"], 12);
  EXPECT_EQ(j["usage"]["total_tokens"], expected_prompt + 12);
}

TEST_F(HttpApi, SameSeedAndPromptGiveTheSameText) {
  const nlohmann::json body = {{"model", model()}, {"prompt", "repeat after me"}, {"max_tokens", 8}};
  const auto a = post_json(port(), "/v1/completions", body).json();
  const auto b = post_json(port(), "/v1/completions", body).json();
  EXPECT_EQ(a["choices"][0]["text"], b["choices"][0]["text"]);
  EXPECT_NE(a["id"], b["id"]);
}

TEST_F(HttpApi, ChatStreamsChunksThenDone) {
  const auto r = post_json(port(), "/v1/chat/completions",
                           {{"model", model()},
                            {"messages", {{{"role", "user"}, {"content", "Say something about Grace memory."}}}},
                            {"max_tokens", 10},
                            {"stream", true},
                            {"stream_options", {{"include_usage", true}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "text/event-stream");
  const auto events = r.events();
  ASSERT_GE(events.size(), 4u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text;
  std::string finish;
  nlohmann::json usage;
  for (std::size_t i = 0; i + 1 < events.size(); ++i) {
    const auto c = nlohmann::json::parse(events[i]);
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    if (c.contains("usage")) {
      usage = c["usage"];
      continue;
    }
    if (i == 0) {
      EXPECT_EQ(c["choices"][0]["delta"]["role"], "assistant");
    }
    text += c["choices"][0]["delta"].value("content", "");
    if (!c["choices"][0]["finish_reason"].is_null()) finish = c["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(word_count(text), 10);
  EXPECT_EQ(finish, "length");
  EXPECT_EQ(usage["completion_tokens"], 10);
}

TEST_F(HttpApi, ModelsHealthAndMetrics) {
  const auto models = get(port(), "/v1/models");
  ASSERT_EQ(models.status, 200);
  EXPECT_EQ(models.json()["data"][0]["id"], model());
  EXPECT_EQ(get(port(), "/health").status, 200);
  post_json(port(), "/v1/completions", {{"model", model()}, {"prompt", "count me"}, {"max_tokens", 3}});
  const auto metrics = get(port(), "/metrics");
  ASSERT_EQ(metrics.status, 200);
  for (const char* name : {"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
                           "vllm:time_to_first_token_seconds_bucket", "vllm:inter_token_latency_seconds_count",
                           "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total"}) {
    EXPECT_NE(metrics.body.find(name), std::string::npos) << name;
  }
  EXPECT_GE(metric_total(metrics.body, "vllm:time_to_first_token_seconds_count"), 1);
}

TEST_F(HttpApi, RepeatedPrefixHitsThePrefixCache) {
  auto hits = [] { return metric_total(get(port(), "/metrics").body, "vllm:prefix_cache_hits_total"); };
  // Longer than the router's view needs: several KV blocks of shared system prompt.
  const std::string system(4 * 64 * emu::live::kBytesPerToken * 4, 'S');
  const double before = hits();
  post_json(port(), "/v1/completions", {{"model", model()}, {"prompt", system + " first question"}, {"max_tokens", 2}});
  // KV events reach the router over the emulated host network: give them a moment.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  post_json(port(), "/v1/completions", {{"model", model()}, {"prompt", system + " second question"}, {"max_tokens", 2}});
  EXPECT_GE(hits() - before, static_cast<double>(system.size() / emu::live::kBytesPerToken / 2));
}

TEST_F(HttpApi, BadRequestsGetOpenAiErrors) {
  const auto bad_json = http_request(port(), verb::post, "/v1/completions", "{nope");
  EXPECT_EQ(bad_json.status, 400);
  EXPECT_EQ(bad_json.json()["error"]["type"], "invalid_request_error");
  for (const char* key : {"message", "type", "param", "code"}) EXPECT_TRUE(bad_json.json()["error"].contains(key));
  const auto bad_field = post_json(port(), "/v1/completions", {{"model", model()}, {"prompt", 3}});
  EXPECT_EQ(bad_field.status, 400);
  EXPECT_EQ(bad_field.json()["error"]["param"], "prompt");
  EXPECT_EQ(post_json(port(), "/v1/completions", {{"model", "nope"}, {"prompt", "x"}}).status, 404);
  EXPECT_EQ(get(port(), "/v2/everything").status, 404);
  EXPECT_EQ(get(port(), "/v1/completions").status, 405);
  // Prompt and output over the model's context length (DeepSeek-V3: 163,840): 400, as vLLM answers.
  const std::int64_t context = server_->engine().max_context_tokens();
  ASSERT_EQ(context, 163840);
  const auto too_long =
      post_json(port(), "/v1/completions", {{"model", model()}, {"prompt", "x"}, {"max_tokens", context}});
  EXPECT_EQ(too_long.status, 400) << too_long.body;
  EXPECT_EQ(too_long.json()["error"]["code"], "context_length_exceeded");
  EXPECT_NE(too_long.json()["error"]["message"].get<std::string>().find("maximum context length is 163840 tokens"),
            std::string::npos)
      << too_long.body;
  const auto unknown_fault = post_json(port(), "/admin/fault", {{"kind", "melt"}});
  EXPECT_EQ(unknown_fault.status, 400);
  EXPECT_NE(unknown_fault.json()["error"]["message"].get<std::string>().find("kind"), std::string::npos);
  EXPECT_EQ(post_json(port(), "/admin/fault", {{"kind", "gpu_lost"}, {"target", 999}}).status, 400);
  EXPECT_EQ(post_json(port(), "/admin/fault", {{"kind", "gpu_lost"}, {"target", 1}, {"at_s", 5}}).status, 400);
  EXPECT_EQ(http_request(port(), verb::post, "/admin/fault", "{oops").status, 400);
  // The server is still there.
  EXPECT_EQ(get(port(), "/health").status, 200);
}

// A stop sequence ends the answer before its first occurrence (the sequence is not part of it), with
// finish_reason "stop", whole or streamed. The expected text is cut by hand from the same prompt's
// answer without a stop (same seed and prompt, same words).
TEST_F(HttpApi, StopSequencesCutTheAnswer) {
  const nlohmann::json plain = {{"model", model()}, {"prompt", "Tell me about the fabric."}, {"max_tokens", 24}};
  const std::string full = post_json(port(), "/v1/completions", plain).json()["choices"][0]["text"];
  // The sixth word with its spaces: a sequence the answer holds, ending it after at most five words.
  std::size_t at = 0;
  for (int w = 0; w < 5; ++w) at = full.find(' ', at) + 1;
  const std::string stop = " " + full.substr(at, full.find(' ', at) - at) + " ";
  const std::string expected = full.substr(0, full.find(stop));
  nlohmann::json body = plain;
  body["stop"] = nlohmann::json::array({"never in the answer", stop});
  const auto whole = post_json(port(), "/v1/completions", body).json();
  EXPECT_EQ(whole["choices"][0]["text"], expected);
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "stop");
  EXPECT_LT(whole["usage"]["completion_tokens"].get<int>(), 24);
  body["stream"] = true;
  std::string streamed;
  std::string reason;
  for (const auto& e : post_json(port(), "/v1/completions", body).events()) {
    if (e == "[DONE]") continue;
    const auto c = nlohmann::json::parse(e);
    streamed += c["choices"][0]["text"].get<std::string>();
    if (!c["choices"][0]["finish_reason"].is_null()) reason = c["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(streamed, expected);
  EXPECT_EQ(reason, "stop");
  // Both counted as finished at a stop sequence, not cancelled, once their engines have stopped them.
  const auto stopped = [] {
    return metric_total(get(port(), "/metrics").body, "vllm:request_success_total", {{"finished_reason", "stop"}});
  };
  for (int i = 0; i < 100 && stopped() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(stopped(), 2);
}

// Holds the engine's runtime thread, as a long emulation step would, until released.
class RuntimeStall {
 public:
  explicit RuntimeStall(emu::live::LiveEngine& engine) {
    auto stalled = std::make_shared<std::promise<void>>();
    std::future<void> started = stalled->get_future();
    EXPECT_TRUE(engine.post([held = release_.get_future().share(), stalled] {
      stalled->set_value();
      held.wait();
    }));
    started.wait();
  }
  ~RuntimeStall() { release(); }
  RuntimeStall(const RuntimeStall&) = delete;
  RuntimeStall& operator=(const RuntimeStall&) = delete;
  void release() {
    if (!released_) release_.set_value();
    released_ = true;
  }

 private:
  std::promise<void> release_;
  bool released_ = false;
};

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

TEST(HttpEngineWait, ABusyEngineBlocksNoIoThreadAndAFaultItDidNotTakeIsNotInjected) {
  emu::live::LiveServerOptions opts;
  opts.http_threads = 1;  // a blocked I/O thread would hold up every other connection
  opts.http.engine_wait = std::chrono::milliseconds(1500);
  auto server = start_server(opts);
  const std::uint16_t http = server->http_port();
  const std::string faults_line =
      "nvl72emu:faults_injected_total{model_name=\"" + server->engine().model_name() + "\"} ";
  RuntimeStall stall(server->engine());

  const auto asked = std::chrono::steady_clock::now();
  auto fault = std::async(std::launch::async, [http] {
    return post_json(http, "/admin/fault", {{"kind", "gpu_lost"}, {"target", 1}});
  });
  auto metrics = std::async(std::launch::async, [http] { return get(http, "/metrics"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto health_asked = std::chrono::steady_clock::now();
  EXPECT_EQ(get(http, "/health").status, 200);
  EXPECT_LT(elapsed_ms(health_asked), 1000.0) << "/health waited behind the engine";

  const HttpReply busy = fault.get();
  EXPECT_GE(elapsed_ms(asked), 1500.0);
  EXPECT_EQ(busy.status, 503) << busy.body;
  EXPECT_EQ(busy.json()["error"]["code"], "engine_busy");
  EXPECT_NE(busy.body.find("not injected"), std::string::npos) << busy.body;
  const HttpReply stale = metrics.get();
  EXPECT_EQ(stale.status, 200) << "the last gauges and the live counters";
  EXPECT_NE(stale.body.find(faults_line + "0\n"), std::string::npos);

  stall.release();
  const auto g = server->engine().gauges();
  EXPECT_EQ(g.healthy_ranks, g.total_ranks) << "the withdrawn gpu_lost never hit";
  const HttpReply hit =
      post_json(http, "/admin/fault", {{"kind", "straggler"}, {"target", "normal rank 2"}, {"factor", 0.5}, {"duration_s", 1}});
  EXPECT_EQ(hit.status, 200) << hit.body;
  EXPECT_NE(get(http, "/metrics").body.find(faults_line + "1\n"), std::string::npos);
}

TEST(HttpEngineWait, TheBlockingInjectGivesUpOnABusyEngineToo) {
  auto server = start_server();
  RuntimeStall stall(server->engine());
  try {
    server->engine().inject({{"kind", "gpu_lost"}, {"target", 1}});
    ADD_FAILURE() << "a stalled engine took the fault";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not injected"), std::string::npos) << e.what();
  }
  stall.release();
  const auto g = server->engine().gauges();
  EXPECT_EQ(g.healthy_ranks, g.total_ranks);
}

TEST(HttpLimits, BodyOverTheLimitIs413) {
  emu::live::LiveServerOptions opts;
  opts.http.body_limit_bytes = 1024;
  auto server = start_server(opts);
  const auto r = post_json(server->http_port(), "/v1/completions",
                           {{"model", server->engine().model_name()}, {"prompt", std::string(4096, 'p')}});
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(r.json()["error"]["code"], "request_too_large");
}

}  // namespace http_api_test
}  // namespace nvl::live_test
