#pragma once
// A blocking HTTP/1.1 client for the live-mode tests (Boost.Beast): one request per connection, and
// the server-sent events of a streamed answer split out.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

namespace nvl::live_test {

struct HttpReply {
  int status = 0;
  std::string content_type;
  std::string body;
  nlohmann::json json() const { return nlohmann::json::parse(body, nullptr, false); }
  // The "data: ..." payloads of a text/event-stream body, in order.
  std::vector<std::string> events() const {
    std::vector<std::string> out;
    std::size_t pos = 0;
    while ((pos = body.find("data: ", pos)) != std::string::npos) {
      const std::size_t end = body.find("\n\n", pos);
      out.push_back(body.substr(pos + 6, end - pos - 6));
      pos = end;
    }
    return out;
  }
};

inline HttpReply http_request(std::uint16_t port, boost::beast::http::verb method, const std::string& target,
                              const std::string& body = "",
                              std::chrono::seconds timeout = std::chrono::seconds(60)) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  boost::asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  stream.expires_after(timeout);
  stream.connect(boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
  http::request<http::string_body> req{method, target, 11};
  req.set(http::field::host, "127.0.0.1");
  if (!body.empty()) {
    req.set(http::field::content_type, "application/json");
    req.body() = body;
  }
  req.prepare_payload();
  http::write(stream, req);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(1ULL << 30);
  http::read(stream, buffer, parser);
  HttpReply r;
  r.status = static_cast<int>(parser.get().result_int());
  r.content_type = std::string(parser.get()[http::field::content_type]);
  r.body = parser.get().body();
  beast::error_code ec;
  stream.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
  return r;
}

inline HttpReply post_json(std::uint16_t port, const std::string& target, const nlohmann::json& body) {
  return http_request(port, boost::beast::http::verb::post, target, body.dump());
}

inline HttpReply get(std::uint16_t port, const std::string& target) {
  return http_request(port, boost::beast::http::verb::get, target);
}

// The number of words in a filler answer (one per token).
inline std::int64_t word_count(const std::string& text) {
  std::int64_t n = 0;
  bool in_word = false;
  for (char c : text) {
    const bool space = c == ' ';
    if (!space && !in_word) ++n;
    in_word = !space;
  }
  return n;
}

}  // namespace nvl::live_test
