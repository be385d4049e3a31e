#pragma once
// Live mode assembled: the emulated rack on its runtime thread (LiveEngine), the OpenAI-compatible
// HTTP server and the gRPC frontend in front of it. Stopping closes the frontends first, then the rack.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "emu/live/grpc_frontend.h"
#include "emu/live/http_server.h"
#include "emu/live/kv_event_publisher.h"
#include "emu/live/live_engine.h"

namespace nvl::emu::live {

struct LiveServerOptions {
  LiveOptions engine;
  HttpConfig http;
  std::string address = "127.0.0.1";
  int http_port = 8000;   // 0: any free port
  int grpc_port = 50051;  // 0: any free port; negative: no gRPC
  int http_threads = 4;
  // serve --workers: every DP rank also gets its own OpenAI-compatible endpoint (its requests served
  // on that rank, its /metrics and /health) at worker_http_port + rank, and publishes its KV events
  // over ZMQ at kv_events_port + rank (kv_event_publisher.h); every prefill instance gets one at
  // worker_http_port + ranks + instance, which serves the prefill halves of P/D pairs a router sends
  // to it and to a DP rank's endpoint (SGLang's bootstrap fields, naming bootstrap_port + instance).
  // 0: any free ports.
  bool workers = false;
  int worker_http_port = 8100;
  int kv_events_port = 5557;
  int bootstrap_port = 8998;
};

class LiveServer {
 public:
  // A port that cannot be bound is a std::runtime_error naming it.
  LiveServer(const Scenario& scenario, LiveServerOptions opts);
  ~LiveServer();
  LiveServer(const LiveServer&) = delete;
  LiveServer& operator=(const LiveServer&) = delete;

  std::uint16_t http_port() const { return http_->port(); }
  // With workers: engine `engine`'s HTTP endpoint (a DP rank's, then the prefill instances'), a DP
  // rank's KV event port.
  std::uint16_t worker_http_port(std::int32_t engine) const { return workers_.at(static_cast<std::size_t>(engine))->port(); }
  std::uint16_t kv_events_port(std::int32_t rank) const { return kv_events_->port(rank); }
  int grpc_port() const { return grpc_port_; }
  LiveEngine& engine() { return *engine_; }
  void stop();

 private:
  std::unique_ptr<LiveEngine> engine_;
  std::unique_ptr<GrpcFrontend> grpc_service_;
  std::unique_ptr<grpc::Server> grpc_;
  int grpc_port_ = -1;
  std::unique_ptr<HttpServer> http_;
  std::shared_ptr<KvEventPublisher> kv_events_;
  std::vector<std::unique_ptr<HttpServer>> workers_;  // by engine
};

}  // namespace nvl::emu::live
