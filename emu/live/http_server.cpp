#include "emu/live/http_server.h"

#include <stdexcept>

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <spdlog/spdlog.h>

namespace nvl::emu::live {

namespace net = boost::asio;
using tcp = net::ip::tcp;

HttpServer::HttpServer(LiveEngine& engine, HttpConfig config, const std::string& address, std::uint16_t port,
                       int threads)
    : engine_(engine), config_(config), acceptor_(net::make_strand(ioc_)) {
  boost::system::error_code ec;
  const auto ip = net::ip::make_address(address, ec);
  if (ec) throw std::runtime_error("http: '" + address + "' is not an IP address");
  const tcp::endpoint endpoint(ip, port);
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec) throw std::runtime_error("http: cannot listen on " + address + ":" + std::to_string(port) + ": " + ec.message());
  port_ = acceptor_.local_endpoint().port();
  accept();
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { ioc_.run(); });
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::accept() {
  acceptor_.async_accept(net::make_strand(ioc_), [this](boost::system::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec) {
      spdlog::warn("http: accept: {}", ec.message());
    } else {
      std::make_shared<HttpSession>(std::move(socket), engine_, config_, generating_)->run();
    }
    accept();
  });
}

void HttpServer::stop_accepting() {
  net::post(acceptor_.get_executor(), [this] {
    boost::system::error_code ec;
    acceptor_.close(ec);
  });
}

void HttpServer::stop(std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (generating_.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ioc_.stop();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

}  // namespace nvl::emu::live
