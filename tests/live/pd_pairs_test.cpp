// P/D pairs sent to the workers as SGLang's router sends them (serve --workers): one prompt to the
// prefill instance's endpoint and to a DP rank's at once, both with the prefill instance's bootstrap
// port and one room. The pair meets, the prompt is prefilled on that prefill instance (its prompts
// counter moves, a plain request to the same rank leaves it), the rank decodes it; a half whose other
// half never comes fails after the pair timeout; a second half of the same side is refused; fields a
// worker cannot honour are 400s naming them.
#include <future>
#include <string>

#include <gtest/gtest.h>

#include "emu/live/pd_pairs.h"
#include "tests/live/worker_test_helpers.h"

namespace nvl::live_test {
namespace pd_pairs_test {

using emu::live::PdHalf;
using emu::live::PdPairs;
using emu::live::PdTarget;

PdHalf half(engine::RequestId id, std::uint64_t room, bool prefill) {
  PdHalf h;
  h.id = id;
  h.target = PdTarget{0, room, prefill};
  h.rank = prefill ? -1 : 3;
  return h;
}

TEST(PdPairs, HalvesMeetByRoomAndSideOnly) {
  PdPairs pairs;
  PdHalf other;
  EXPECT_EQ(pairs.arrive(half(1, 7, true), other), PdPairs::Met::waiting);
  EXPECT_EQ(pairs.arrive(half(2, 8, false), other), PdPairs::Met::waiting) << "another room";
  EXPECT_EQ(pairs.arrive(half(3, 7, true), other), PdPairs::Met::duplicate);
  EXPECT_EQ(pairs.waiting_prefills(0), 1);
  EXPECT_EQ(pairs.arrive(half(4, 7, false), other), PdPairs::Met::paired);
  EXPECT_EQ(other.id, 1u);
  EXPECT_EQ(pairs.partner(4)->id, 1u);
  EXPECT_EQ(pairs.partner(1)->id, 4u);
  EXPECT_EQ(pairs.waiting_prefills(0), 0);
  EXPECT_FALSE(pairs.leave(1)) << "paired, not waiting";
  EXPECT_TRUE(pairs.leave(2));
  EXPECT_FALSE(pairs.leave(2));
  pairs.end(1);
  EXPECT_FALSE(pairs.partner(4));
  EXPECT_EQ(pairs.arrive(half(5, 7, true), other), PdPairs::Met::waiting) << "the room is free again";
}

nlohmann::json pd_body(const std::string& model, const std::string& prompt, std::int64_t max_tokens,
                       std::int64_t bootstrap_port, std::uint64_t room) {
  return {{"model", model},
          {"prompt", prompt},
          {"max_tokens", max_tokens},
          {"bootstrap_host", "127.0.0.1"},
          {"bootstrap_port", bootstrap_port},
          {"bootstrap_room", room}};
}

TEST(PdPairs, APairIsPrefilledOnItsPrefillInstanceAndDecodedOnItsRank) {
  auto server = start_server(worker_options());
  const std::int32_t ranks = server->engine().ranks();
  ASSERT_EQ(server->engine().prefill_instances(), 1) << "scenarios/ci/live.json: one TP8 prefill instance";
  const std::int32_t prefill_engine = ranks;
  const std::uint16_t prefill_port = server->worker_http_port(prefill_engine);
  const std::uint16_t rank_port = server->worker_http_port(3);
  const std::string model = server->engine().model_name();
  const std::string prompt(4 * 3000, 'p');  // 3,000 tokens at the documented 4 bytes a token
  const auto prefilled = [&] { return engine_figure(prefill_port, "nvl72emu:prefill_prompts_total", prefill_engine); };
  ASSERT_EQ(prefilled(), 0);

  // The decode half first, as a router's two concurrent sends may land.
  auto decode = std::async(std::launch::async, [&] { return post_json(rank_port, "/v1/completions", pd_body(model, prompt, 8, 8998, 42)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const HttpReply p = post_json(prefill_port, "/v1/completions", pd_body(model, prompt, 8, 8998, 42));
  const HttpReply d = decode.get();
  ASSERT_EQ(p.status, 200) << p.body;
  ASSERT_EQ(d.status, 200) << d.body;
  const auto pj = nlohmann::json::parse(p.body);
  const auto dj = nlohmann::json::parse(d.body);
  EXPECT_EQ(pj["usage"]["completion_tokens"], 1) << "the prefill half answers with its first token";
  EXPECT_EQ(pj["usage"]["prompt_tokens"], 3000);
  EXPECT_EQ(dj["usage"]["completion_tokens"], 8);
  EXPECT_EQ(prefilled(), 1) << "the prefill instance computed the prompt";
  EXPECT_EQ(engine_figure(prefill_port, "vllm:request_success_total", prefill_engine), 1);
  EXPECT_EQ(engine_figure(prefill_port, "vllm:prompt_tokens_total", prefill_engine), 3000);
  EXPECT_EQ(engine_figure(rank_port, "vllm:request_success_total", 3), 1) << "decoded on the rank it was sent to";

  // The same prompt length sent to the rank alone is prefilled there: the prefill instance's count stays.
  const HttpReply local = post_json(rank_port, "/v1/completions",
                                    {{"model", model}, {"prompt", std::string(4 * 3000, 'q')}, {"max_tokens", 8}});
  ASSERT_EQ(local.status, 200) << local.body;
  EXPECT_EQ(prefilled(), 1);
  EXPECT_EQ(engine_figure(rank_port, "vllm:request_success_total", 3), 2);
  server->stop();
}

TEST(PdPairs, AHalfWithoutItsOtherHalfFailsAfterThePairTimeout) {
  emu::live::LiveServerOptions opts = worker_options();
  opts.engine.pd_pair_timeout_s = 0.2;  // emulated: 50 ms of wall time at the tests' scale of 4
  auto server = start_server(opts);
  const std::string model = server->engine().model_name();
  const HttpReply alone = post_json(server->worker_http_port(server->engine().ranks()), "/v1/completions",
                                    pd_body(model, "hello", 4, 8998, 7));
  EXPECT_EQ(alone.status, 503) << alone.body;
  EXPECT_NE(alone.body.find("did not arrive within"), std::string::npos) << alone.body;

  // Two decode halves of one room: the second is refused, the first still meets its prefill half.
  auto first = std::async(std::launch::async,
                          [&] { return post_json(server->worker_http_port(1), "/v1/completions", pd_body(model, "hi", 4, 8998, 9)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const HttpReply second = post_json(server->worker_http_port(2), "/v1/completions", pd_body(model, "hi", 4, 8998, 9));
  EXPECT_EQ(second.status, 503) << second.body;
  EXPECT_NE(second.body.find("already has its decode half"), std::string::npos) << second.body;
  const HttpReply p = post_json(server->worker_http_port(server->engine().ranks()), "/v1/completions",
                                pd_body(model, "hi", 4, 8998, 9));
  EXPECT_EQ(p.status, 200) << p.body;
  EXPECT_EQ(first.get().status, 200);
  server->stop();
}

TEST(PdPairs, FieldsAWorkerCannotHonourAreNamed) {
  auto server = start_server(worker_options());
  const std::string model = server->engine().model_name();
  const std::uint16_t prefill_port = server->worker_http_port(server->engine().ranks());
  const auto param_of = [](const HttpReply& r) {
    EXPECT_EQ(r.status, 400) << r.body;
    return nlohmann::json::parse(r.body)["error"]["param"].get<std::string>();
  };
  EXPECT_EQ(param_of(post_json(prefill_port, "/v1/completions", {{"model", model}, {"prompt", "x"}})), "bootstrap_room")
      << "a prefill worker serves only halves of pairs";
  EXPECT_EQ(param_of(post_json(server->worker_http_port(0), "/v1/completions", pd_body(model, "x", 4, 9000, 1))),
            "bootstrap_port")
      << "no prefill instance has it";
  EXPECT_EQ(param_of(post_json(server->http_port(), "/v1/completions", pd_body(model, "x", 4, 8998, 1))),
            "bootstrap_room")
      << "the main port's router splits P/D itself";
  nlohmann::json negative = pd_body(model, "x", 4, 8998, 1);
  negative["bootstrap_room"] = -1;
  EXPECT_EQ(param_of(post_json(prefill_port, "/v1/completions", negative)), "bootstrap_room");
  nlohmann::json no_host = pd_body(model, "x", 4, 8998, 1);
  no_host.erase("bootstrap_host");
  EXPECT_EQ(param_of(post_json(prefill_port, "/v1/completions", no_host)), "bootstrap_host");
  EXPECT_EQ(get(prefill_port, "/health").status, 200);
  server->stop();
}

}  // namespace pd_pairs_test
}  // namespace nvl::live_test
