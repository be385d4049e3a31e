#include "emu/live/grpc_frontend.h"

#include <chrono>
#include <memory>

#include "emu/rt/errors.h"
#include "emu/live/filler_text.h"
#include "emu/live/openai_api.h"
#include "emu/live/update_queue.h"

namespace nvl::emu::live {

namespace {

// How often a waiting Generate looks whether its client has gone.
constexpr std::chrono::milliseconds kCancelPoll{50};

grpc::Status refusal_status(const Admission& a) {
  switch (a.refusal) {
    case Refusal::queue_full: return {grpc::StatusCode::RESOURCE_EXHAUSTED, a.detail};
    case Refusal::too_long: return {grpc::StatusCode::OUT_OF_RANGE, a.detail};
    case Refusal::over_context: return {grpc::StatusCode::INVALID_ARGUMENT, a.detail};
    default: return {grpc::StatusCode::UNAVAILABLE, a.detail};
  }
}

}  // namespace

grpc::Status GrpcFrontend::Generate(grpc::ServerContext* ctx, const engine::proto::GenerateRequest* req,
                                    grpc::ServerWriter<engine::proto::GenerateChunk>* writer) {
  if (req->prompt().empty()) return {grpc::StatusCode::INVALID_ARGUMENT, "prompt must not be empty"};
  const std::int64_t max_tokens = req->max_tokens() == 0 ? kDefaultCompletionTokens : req->max_tokens();
  auto queue = std::make_shared<UpdateQueue>();
  const Admission a =
      engine_.submit_text(req->prompt(), max_tokens, [queue](const StreamUpdate& u) { queue->push(u); });
  if (a.refusal != Refusal::none) {
    engine_.metrics().record_rejected(http_status(a.refusal));
    return refusal_status(a);
  }
  const FillerText filler(engine_.seed(), req->prompt());
  while (true) {
    const auto u = queue->pop(kCancelPoll);
    if (!u) {
      if (ctx->IsCancelled()) {
        engine_.cancel(a.id);
        return {grpc::StatusCode::CANCELLED, "the client cancelled"};
      }
      continue;
    }
    engine::proto::GenerateChunk chunk;
    auto* tokens = chunk.mutable_tokens();
    tokens->set_request_id(a.id);
    tokens->set_first_index(static_cast<std::uint32_t>(u->output_tokens - u->new_tokens));
    tokens->set_count(static_cast<std::uint32_t>(u->new_tokens));
    tokens->set_finished(u->finished);
    if (u->finished) tokens->set_finish_reason(u->failure.empty() ? "length" : u->failure);
    chunk.set_text(filler.tokens(u->output_tokens - u->new_tokens, u->new_tokens));
    chunk.set_prompt_tokens(static_cast<std::uint32_t>(u->prompt_tokens));
    if (!writer->Write(chunk)) {
      if (!u->finished) engine_.cancel(a.id);
      return {grpc::StatusCode::CANCELLED, "the client went away"};
    }
    if (u->finished) return grpc::Status::OK;
  }
}

grpc::Status GrpcFrontend::CancelRequest(grpc::ServerContext*, const engine::proto::Cancel* req,
                                         engine::proto::HealthStatus* out) {
  engine_.cancel(req->request_id());
  out->set_rank(-1);
  out->set_healthy(engine_.healthy());
  out->set_detail("cancelled request " + std::to_string(req->request_id()));
  return grpc::Status::OK;
}

grpc::Status GrpcFrontend::Health(grpc::ServerContext*, const engine::proto::HealthCheck* req,
                                  engine::proto::HealthStatus* out) {
  const EngineGauges g = engine_.gauges();
  out->set_rank(req->rank());
  out->set_healthy(engine_.healthy());
  out->set_detail(std::to_string(g.healthy_ranks) + " of " + std::to_string(g.total_ranks) + " ranks healthy");
  return grpc::Status::OK;
}

grpc::Status GrpcFrontend::Status(grpc::ServerContext*, const engine::proto::StatusRequest*,
                                  engine::proto::ServerStatus* out) {
  const EngineGauges g = engine_.gauges();
  out->set_running(static_cast<std::uint32_t>(g.running));
  out->set_waiting(static_cast<std::uint32_t>(g.waiting));
  out->set_healthy_ranks(static_cast<std::uint32_t>(g.healthy_ranks));
  out->set_total_ranks(static_cast<std::uint32_t>(g.total_ranks));
  out->set_kv_usage(g.kv_usage);
  return grpc::Status::OK;
}

grpc::Status GrpcFrontend::InjectFault(grpc::ServerContext*, const engine::proto::FaultSpec* req,
                                       engine::proto::FaultReply* out) {
  const nlohmann::json fault = nlohmann::json::parse(req->fault_json(), nullptr, false);
  if (fault.is_discarded()) return {grpc::StatusCode::INVALID_ARGUMENT, "fault_json is not valid JSON"};
  try {
    out->set_injected(engine_.inject(fault));
  } catch (const rt::InputError& e) {
    return {grpc::StatusCode::INVALID_ARGUMENT, e.what()};
  } catch (const std::exception& e) {
    return {grpc::StatusCode::UNAVAILABLE, e.what()};
  }
  return grpc::Status::OK;
}

}  // namespace nvl::emu::live
