// Live mode under stress: a client that goes away, a full queue, faults while serving, 503.
#include <chrono>
#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "tests/live/http_test_client.h"
#include "tests/live/live_test_server.h"

namespace nvl::live_test {
namespace serving_test {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

// Opens a streamed completion and returns the socket once the first event has arrived.
struct OpenStream {
  net::io_context ioc;
  net::ip::tcp::socket socket{ioc};
  OpenStream(std::uint16_t port, const std::string& model, std::int64_t max_tokens) {
    socket.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
    http::request<http::string_body> req{http::verb::post, "/v1/completions", 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::content_type, "application/json");
    req.body() = nlohmann::json{{"model", model}, {"prompt", "a long answer please"}, {"max_tokens", max_tokens},
                                {"stream", true}}
                     .dump();
    req.prepare_payload();
    http::write(socket, req);
    std::string seen;
    char buf[4096];
    while (seen.find("data: ") == std::string::npos) {
      const std::size_t n = socket.read_some(net::buffer(buf));
      seen.append(buf, n);
    }
  }
  // Everything the server still sends, until it closes the connection.
  std::string rest() {
    std::string out;
    char buf[4096];
    boost::system::error_code ec;
    while (!ec) out.append(buf, socket.read_some(net::buffer(buf), ec));
    return out;
  }
  void close() {
    boost::system::error_code ec;
    socket.shutdown(net::ip::tcp::socket::shutdown_both, ec);
    socket.close(ec);
  }
};

template <typename Pred>
bool eventually(Pred pred, std::chrono::seconds limit = std::chrono::seconds(10)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

TEST(Serving, ClientDisconnectCancelsAndFreesKv) {
  auto server = start_server();
  auto& engine = server->engine();
  OpenStream s(server->http_port(), engine.model_name(), 100000);
  ASSERT_TRUE(eventually([&] { return engine.gauges().kv_usage > 0; })) << "the request holds no KV";
  EXPECT_EQ(engine.gauges().running, 1);
  s.close();
  EXPECT_TRUE(eventually([&] {
    const auto g = engine.gauges();
    return g.kv_usage == 0 && g.running == 0;
  })) << "kv usage stays at " << engine.gauges().kv_usage;
  EXPECT_EQ(engine.metrics().cancelled(), 1u);
  EXPECT_EQ(engine.in_flight(), 0u);
}

TEST(Serving, ShutdownEndsOpenStreamsWithAnErrorEvent) {
  auto server = start_server();
  OpenStream s(server->http_port(), server->engine().model_name(), 100000);
  server->stop();
  const std::string rest = s.rest();
  EXPECT_NE(rest.find("server shutting down"), std::string::npos) << rest.substr(rest.size() > 500 ? rest.size() - 500 : 0);
  EXPECT_NE(rest.find("data: [DONE]"), std::string::npos);
  EXPECT_NE(rest.find("\r\n0\r\n\r\n"), std::string::npos);  // the chunked body's end
}

TEST(Serving, FullQueueIs429AndTheServerRecovers) {
  emu::live::LiveServerOptions opts;
  opts.engine.max_in_flight = 2;
  auto server = start_server(opts);
  const std::string model = server->engine().model_name();
  OpenStream a(server->http_port(), model, 100000);
  OpenStream b(server->http_port(), model, 100000);
  const auto r = post_json(server->http_port(), "/v1/completions", {{"model", model}, {"prompt", "x"}});
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.json()["error"]["code"], "rate_limit_exceeded");
  a.close();
  b.close();
  ASSERT_TRUE(eventually([&] { return server->engine().in_flight() == 0; }));
  EXPECT_EQ(post_json(server->http_port(), "/v1/completions", {{"model", model}, {"prompt", "x"}, {"max_tokens", 2}})
                .status,
            200);
}

TEST(Serving, FaultsWhileServingDegradeRatherThanDrop) {
  auto server = start_server();
  const auto port = server->http_port();
  const std::string model = server->engine().model_name();
  std::vector<std::future<HttpReply>> clients;
  for (int i = 0; i < 8; ++i) {
    clients.push_back(std::async(std::launch::async, [&, i] {
      return post_json(port, "/v1/completions",
                       {{"model", model}, {"prompt", "client " + std::to_string(i)}, {"max_tokens", 40}, {"stream", true}});
    }));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(post_json(port, "/admin/fault", {{"kind", "straggler"}, {"target", 0}, {"factor", 0.5}, {"duration_s", 5}})
                .status,
            200);
  EXPECT_EQ(post_json(port, "/admin/fault", {{"kind", "nvlink_error"}, {"target", 1}, {"links", 2}}).status, 200);
  EXPECT_EQ(post_json(port, "/admin/fault", {{"kind", "gpu_lost"}, {"target", 2}}).status, 200);
  EXPECT_EQ(post_json(port, "/admin/fault", {{"kind", "router_restart"}}).status, 200);
  for (auto& c : clients) {
    const HttpReply r = c.get();
    EXPECT_EQ(r.status, 200);
    const auto events = r.events();
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back(), "[DONE]");  // complete, whether it finished or failed with an error event
  }
  EXPECT_EQ(get(port, "/health").status, 200);  // seven ranks still healthy
  const auto after = post_json(port, "/v1/completions", {{"model", model}, {"prompt", "after"}, {"max_tokens", 4}});
  EXPECT_TRUE(after.status == 200 || after.status == 503) << after.status;
}

TEST(Serving, NoHealthyWorkerIs503) {
  auto server = start_server();
  const auto port = server->http_port();
  const std::string model = server->engine().model_name();
  const auto g = server->engine().gauges();
  for (int gpu = 0; gpu < g.total_ranks; ++gpu) {
    ASSERT_EQ(post_json(port, "/admin/fault", {{"kind", "gpu_lost"}, {"target", gpu}}).status, 200);
  }
  const auto health = get(port, "/health");
  EXPECT_EQ(health.status, 503);
  EXPECT_EQ(health.json()["error"]["code"], "no_healthy_worker");
  const auto r = post_json(port, "/v1/completions", {{"model", model}, {"prompt", "anyone?"}});
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(get(port, "/v1/models").status, 200);  // the server itself is still up
}

}  // namespace serving_test
}  // namespace nvl::live_test
