#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "tests/proto/wiring_check.grpc.pb.h"
#include "tests/proto/wiring_check.pb.h"

namespace wiring_test {

class EchoService final : public nvl::test::Echo::Service {
  grpc::Status Call(grpc::ServerContext*, const nvl::test::Ping* in, nvl::test::Ping* out) override {
    out->set_seq(in->seq() + 1);
    out->set_payload(in->payload());
    return grpc::Status::OK;
  }
};

TEST(ProtoWiring, MessageRoundTripsThroughItsWireForm) {
  nvl::test::Ping ping;
  ping.set_seq(41);
  ping.set_payload("kv-ready");
  nvl::test::Ping back;
  ASSERT_TRUE(back.ParseFromString(ping.SerializeAsString()));
  EXPECT_EQ(back.seq(), 41u);
  EXPECT_EQ(back.payload(), "kv-ready");
}

TEST(ProtoWiring, GeneratedServiceAnswersOverAnInProcessChannel) {
  EchoService service;
  grpc::ServerBuilder builder;
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto stub = nvl::test::Echo::NewStub(server->InProcessChannel(grpc::ChannelArguments()));
  grpc::ClientContext ctx;
  nvl::test::Ping req, resp;
  req.set_seq(1);
  ASSERT_TRUE(stub->Call(&ctx, req, &resp).ok());
  EXPECT_EQ(resp.seq(), 2u);
  server->Shutdown();
}

}  // namespace wiring_test
