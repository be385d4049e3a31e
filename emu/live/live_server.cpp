#include "emu/live/live_server.h"

#include <chrono>
#include <stdexcept>

namespace nvl::emu::live {

namespace {

// How long answers still being written at shutdown (their last event says the server is shutting
// down) get before their connections are cut.
constexpr auto kDrain = std::chrono::milliseconds(1000);

}  // namespace

LiveServer::LiveServer(const Scenario& scenario, LiveServerOptions opts)
    : engine_(std::make_unique<LiveEngine>(scenario, opts.engine)) {
  if (opts.workers) {
    try {
      kv_events_ = std::make_shared<KvEventPublisher>(opts.address, opts.kv_events_port, engine_->ranks(),
                                                      engine_->block_tokens());
    } catch (...) {
      engine_->stop();
      throw;
    }
    // Before any endpoint opens: every request's events are published.
    engine_->publish_kv_events([pub = kv_events_](std::int32_t rank, double ts, std::span<const engine::KvEvent> events) {
      pub->publish(rank, ts, events);
    });
  }
  if (opts.grpc_port >= 0) {
    grpc_service_ = std::make_unique<GrpcFrontend>(*engine_);
    grpc::ServerBuilder builder;
    int bound = 0;
    builder.AddListeningPort(opts.address + ":" + std::to_string(opts.grpc_port), grpc::InsecureServerCredentials(),
                             &bound);
    builder.RegisterService(grpc_service_.get());
    grpc_ = builder.BuildAndStart();
    if (!grpc_ || bound == 0) {
      engine_->stop();
      throw std::runtime_error("grpc: cannot listen on " + opts.address + ":" + std::to_string(opts.grpc_port));
    }
    grpc_port_ = bound;
  }
  opts.http.started_s =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  try {
    http_ = std::make_unique<HttpServer>(*engine_, opts.http, opts.address, static_cast<std::uint16_t>(opts.http_port),
                                         opts.http_threads);
    opts.http.bootstrap_port = opts.bootstrap_port;
    for (std::int32_t e = 0; opts.workers && e < engine_->ranks() + engine_->prefill_instances(); ++e) {
      HttpConfig own = opts.http;
      own.engine = e;
      const int port = opts.worker_http_port == 0 ? 0 : opts.worker_http_port + e;
      workers_.push_back(std::make_unique<HttpServer>(*engine_, own, opts.address, static_cast<std::uint16_t>(port), 1));
    }
  } catch (...) {
    stop();
    throw;
  }
}

LiveServer::~LiveServer() { stop(); }

void LiveServer::stop() {
  // Refuse new work, fail what is in flight (each client hears why), let the frontends flush, stop.
  if (http_) http_->stop_accepting();
  for (auto& w : workers_) w->stop_accepting();
  if (engine_) engine_->stop();
  if (http_) http_->stop(kDrain);
  for (auto& w : workers_) w->stop(kDrain);
  if (grpc_) grpc_->Shutdown(std::chrono::system_clock::now() + kDrain);
}

}  // namespace nvl::emu::live
