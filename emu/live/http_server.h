#pragma once
// The OpenAI-compatible HTTP server: an Asio acceptor and a few threads running its io_context; each
// connection is an HttpSession.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "emu/live/http_session.h"
#include "emu/live/live_engine.h"

namespace nvl::emu::live {

class HttpServer {
 public:
  // Binds address:port (port 0: any free one) and starts `threads` threads. A port in use is a
  // std::runtime_error naming it.
  HttpServer(LiveEngine& engine, HttpConfig config, const std::string& address, std::uint16_t port, int threads);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  std::uint16_t port() const { return port_; }
  // New connections are refused from now on.
  void stop_accepting();
  // Waits (up to `limit`) for the generations still answering to finish writing, then stops the
  // threads; connections still open are dropped.
  void stop(std::chrono::milliseconds limit = std::chrono::milliseconds(0));

 private:
  void accept();

  LiveEngine& engine_;
  HttpConfig config_;
  std::atomic<int> generating_{0};  // sessions with a generation not yet closed
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace nvl::emu::live
