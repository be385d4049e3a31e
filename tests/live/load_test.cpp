// 200 concurrent streaming clients on loopback, bounded in time: every request answered, every stream
// complete, no errors, the server healthy afterwards. Prints requests/s and p99 latency (wall).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/live/http_test_client.h"
#include "tests/live/live_test_server.h"

namespace nvl::live_test {
namespace load_test {

constexpr int kClients = 200;
constexpr int kTokens = 16;

TEST(LiveLoad, TwoHundredConcurrentStreamingClients) {
  emu::live::LiveServerOptions opts;
  opts.engine.time_scale = 10.0;
  auto server = start_server(opts);
  const auto port = server->http_port();
  const std::string model = server->engine().model_name();
  std::vector<double> latency_s(kClients, -1);
  std::vector<std::string> problems(kClients);
  std::vector<std::thread> clients;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      const auto t0 = std::chrono::steady_clock::now();
      try {
        const auto r = http_request(port, boost::beast::http::verb::post, "/v1/chat/completions",
                                    nlohmann::json{{"model", model},
                                                   {"messages", {{{"role", "user"}, {"content", "client " + std::to_string(i)}}}},
                                                   {"max_tokens", kTokens},
                                                   {"stream", true}}
                                        .dump(),
                                    std::chrono::seconds(60));
        const auto events = r.events();
        std::string text;
        for (std::size_t e = 0; e + 1 < events.size(); ++e) {
          text += nlohmann::json::parse(events[e])["choices"][0]["delta"].value("content", "");
        }
        if (r.status != 200) problems[i] = "status " + std::to_string(r.status) + ": " + r.body;
        else if (events.empty() || events.back() != "[DONE]") problems[i] = "stream not complete";
        else if (word_count(text) != kTokens) problems[i] = "got " + std::to_string(word_count(text)) + " tokens";
      } catch (const std::exception& e) {
        problems[i] = e.what();
      }
      latency_s[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    });
  }
  for (auto& t : clients) t.join();
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int ok = 0;
  for (int i = 0; i < kClients; ++i) {
    if (problems[i].empty()) {
      ++ok;
    } else {
      ADD_FAILURE() << "client " << i << ": " << problems[i];
    }
  }
  std::sort(latency_s.begin(), latency_s.end());
  const double p99 = latency_s[static_cast<std::size_t>(std::ceil(0.99 * kClients)) - 1];
  std::printf("live load: %d/%d streams complete in %.2f s wall: %.1f requests/s, p99 latency %.3f s (time scale %.0f)\n",
              ok, kClients, wall_s, kClients / wall_s, p99, opts.engine.time_scale);
  EXPECT_EQ(ok, kClients);
  EXPECT_EQ(get(port, "/health").status, 200);
  EXPECT_EQ(server->engine().metrics().completed(), static_cast<std::uint64_t>(kClients));
  EXPECT_EQ(server->engine().metrics().failed(), 0u);
}

}  // namespace load_test
}  // namespace nvl::live_test
