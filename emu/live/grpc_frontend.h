#pragma once
// The engine's gRPC frontend service (engine/proto/frontend.proto) over a LiveEngine: Generate
// streams GenerateChunks as tokens arrive; a client that cancels (or goes away) cancels its request.
#include "emu/live/live_engine.h"
#include "engine/proto/frontend.grpc.pb.h"

namespace nvl::emu::live {

class GrpcFrontend final : public engine::proto::Frontend::Service {
 public:
  explicit GrpcFrontend(LiveEngine& engine) : engine_(engine) {}

  grpc::Status Generate(grpc::ServerContext* ctx, const engine::proto::GenerateRequest* req,
                        grpc::ServerWriter<engine::proto::GenerateChunk>* writer) override;
  grpc::Status CancelRequest(grpc::ServerContext* ctx, const engine::proto::Cancel* req,
                             engine::proto::HealthStatus* out) override;
  grpc::Status Health(grpc::ServerContext* ctx, const engine::proto::HealthCheck* req,
                      engine::proto::HealthStatus* out) override;
  grpc::Status Status(grpc::ServerContext* ctx, const engine::proto::StatusRequest* req,
                      engine::proto::ServerStatus* out) override;
  grpc::Status InjectFault(grpc::ServerContext* ctx, const engine::proto::FaultSpec* req,
                           engine::proto::FaultReply* out) override;

 private:
  LiveEngine& engine_;
};

}  // namespace nvl::emu::live
