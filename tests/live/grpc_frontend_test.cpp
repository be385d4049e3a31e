// The gRPC frontend service against a C++ gRPC client over loopback TCP.
#include <chrono>
#include <thread>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "engine/proto/frontend.grpc.pb.h"
#include "tests/live/http_test_client.h"
#include "tests/live/live_test_server.h"

namespace nvl::live_test {
namespace grpc_frontend_test {

namespace proto = engine::proto;

class GrpcFrontend : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = start_server();
    stub_ = proto::Frontend::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->grpc_port()),
                                                         grpc::InsecureChannelCredentials()));
  }
  std::unique_ptr<emu::live::LiveServer> server_;
  std::unique_ptr<proto::Frontend::Stub> stub_;
};

TEST_F(GrpcFrontend, GenerateStreamsEveryTokenOnce) {
  grpc::ClientContext ctx;
  proto::GenerateRequest req;
  req.set_prompt("Tell me about the NVL72 spine.");
  req.set_max_tokens(20);
  auto reader = stub_->Generate(&ctx, req);
  proto::GenerateChunk chunk;
  std::uint32_t next = 0;
  std::string text, finish;
  int chunks = 0;
  while (reader->Read(&chunk)) {
    ++chunks;
    EXPECT_EQ(chunk.tokens().first_index(), next);  // in order, no gap, no repeat
    next += chunk.tokens().count();
    text += chunk.text();
    EXPECT_EQ(chunk.prompt_tokens(), (req.prompt().size() + 3) / 4);
    if (chunk.tokens().finished()) finish = chunk.tokens().finish_reason();
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(next, 20u);
  EXPECT_EQ(word_count(text), 20);
  EXPECT_EQ(finish, "length");
  EXPECT_GE(chunks, 2);
}

TEST_F(GrpcFrontend, CancelByIdFreesTheRequest) {
  grpc::ClientContext ctx;
  proto::GenerateRequest req;
  req.set_prompt("a very long answer");
  req.set_max_tokens(100000);  // within the model's context length (163,840)
  auto reader = stub_->Generate(&ctx, req);
  proto::GenerateChunk chunk;
  ASSERT_TRUE(reader->Read(&chunk));
  grpc::ClientContext cctx;
  proto::Cancel cancel;
  cancel.set_request_id(chunk.tokens().request_id());
  proto::HealthStatus status;
  ASSERT_TRUE(stub_->CancelRequest(&cctx, cancel, &status).ok());
  // The stream stops delivering; the client then ends it.
  ctx.TryCancel();
  while (reader->Read(&chunk)) {
  }
  reader->Finish();
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (server_->engine().gauges().kv_usage > 0 && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(server_->engine().gauges().kv_usage, 0.0);
  EXPECT_EQ(server_->engine().in_flight(), 0u);
}

TEST_F(GrpcFrontend, HealthStatusAndFaults) {
  {
    grpc::ClientContext ctx;
    proto::HealthCheck req;
    req.set_rank(-1);
    proto::HealthStatus out;
    ASSERT_TRUE(stub_->Health(&ctx, req, &out).ok());
    EXPECT_TRUE(out.healthy());
  }
  {
    grpc::ClientContext ctx;
    proto::FaultSpec f;
    f.set_fault_json(R"({"kind": "gpu_lost", "target": 0})");
    proto::FaultReply out;
    ASSERT_TRUE(stub_->InjectFault(&ctx, f, &out).ok());
    EXPECT_EQ(out.injected(), "gpu_lost on 0");
  }
  {
    grpc::ClientContext ctx;
    proto::FaultSpec f;
    f.set_fault_json(R"({"kind": "meteor", "target": 0})");
    proto::FaultReply out;
    EXPECT_EQ(stub_->InjectFault(&ctx, f, &out).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  grpc::ClientContext ctx;
  proto::ServerStatus status;
  ASSERT_TRUE(stub_->Status(&ctx, proto::StatusRequest(), &status).ok());
  EXPECT_EQ(status.total_ranks(), 8u);
  EXPECT_EQ(status.healthy_ranks(), 7u);
}

TEST_F(GrpcFrontend, EmptyPromptIsInvalid) {
  grpc::ClientContext ctx;
  proto::GenerateRequest req;
  auto reader = stub_->Generate(&ctx, req);
  proto::GenerateChunk chunk;
  EXPECT_FALSE(reader->Read(&chunk));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

}  // namespace grpc_frontend_test
}  // namespace nvl::live_test
