// Each run checker on a good history passes and on a bad one fails, saying what broke.
#include <set>

#include <gtest/gtest.h>

#include "emu/check/assertion_check.h"
#include "emu/check/determinism_checker.h"
#include "emu/check/error_event_checker.h"
#include "emu/check/request_accounting_checker.h"
#include "emu/check/resource_baseline_checker.h"
#include "emu/check/standard_checkers.h"
#include "emu/check/token_delivery_checker.h"

#include <nlohmann/json.hpp>

namespace nvl::emu {
namespace checkers_test {

engine::RequestState request(engine::RequestId id, std::int64_t max_output_tokens) {
  engine::RequestState r;
  r.id = id;
  r.prompt_tokens = 100;
  r.max_output_tokens = max_output_tokens;
  return r;
}

engine::RequestTiming done(engine::RequestId id, std::int64_t output_tokens, std::string failure = "") {
  engine::RequestTiming t;
  t.id = id;
  t.output_tokens = output_tokens;
  t.finished = rt::Time::zero() + rt::ms(5);
  t.failure = std::move(failure);
  return t;
}

RunEnd drained() {
  RunEnd e;
  e.quiescent = true;
  return e;
}

TEST(RequestAccountingChecker, CompletedFailedAndInFlightAddUp) {
  RequestAccountingChecker c;
  c.on_submit(request(1, 3));
  c.on_submit(request(2, 3));
  c.on_submit(request(3, 3));
  c.on_done(done(1, 3));
  c.on_done(done(2, 0, "no healthy DP rank to serve it"));
  RunEnd end;  // stopped at the time limit with request 3 running
  end.system_in_flight = 1;
  const CheckResult r = c.finish(end);
  EXPECT_TRUE(r.pass) << r.detail;
  EXPECT_NE(r.detail.find("3 submitted = 1 completed + 1 failed + 1 in flight"), std::string::npos) << r.detail;
}

TEST(RequestAccountingChecker, ALostRequestFails) {
  RequestAccountingChecker c;
  c.on_submit(request(1, 3));
  c.on_submit(request(2, 3));
  c.on_done(done(1, 3));
  const CheckResult r = c.finish(drained());  // the system holds nothing, yet request 2 never ended
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.detail.find("1 requests in flight by the workload's count, 0 by the serving system's"), std::string::npos)
      << r.detail;
}

TEST(RequestAccountingChecker, ARequestReportedTwiceFails) {
  RequestAccountingChecker c;
  c.on_submit(request(1, 3));
  c.on_done(done(1, 3));
  c.on_done(done(1, 3));
  const CheckResult r = c.finish(drained());
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.detail.find("request 1 reported over but not in flight"), std::string::npos) << r.detail;
}

TEST(TokenDeliveryChecker, OnceAndInOrderPasses) {
  TokenDeliveryChecker c;
  c.on_submit(request(1, 5));
  c.on_tokens(1, 1, true, false);
  c.on_tokens(1, 2, false, false);
  c.on_tokens(1, 2, false, true);
  c.on_done(done(1, 5));
  const CheckResult r = c.finish(drained());
  EXPECT_TRUE(r.pass) << r.detail;
  EXPECT_NE(r.detail.find("5 tokens"), std::string::npos) << r.detail;
}

TEST(TokenDeliveryChecker, TokensBeforeTheFirstFail) {
  TokenDeliveryChecker c;
  c.on_submit(request(1, 5));
  c.on_tokens(1, 1, false, false);
  const CheckResult r = c.finish(drained());
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.detail.find("request 1: tokens delivered before its first token"), std::string::npos) << r.detail;
}

TEST(TokenDeliveryChecker, ASecondFirstTokenOrTokensAfterTheEndFail) {
  TokenDeliveryChecker twice;
  twice.on_submit(request(1, 5));
  twice.on_tokens(1, 1, true, false);
  twice.on_tokens(1, 1, true, false);
  EXPECT_NE(twice.finish(drained()).detail.find("the first token delivered twice"), std::string::npos);

  TokenDeliveryChecker late;
  late.on_submit(request(2, 5));
  late.on_tokens(2, 1, true, true);
  late.on_tokens(2, 1, false, false);
  const CheckResult r = late.finish(drained());
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.detail.find("after its finishing delivery"), std::string::npos) << r.detail;
}

TEST(TokenDeliveryChecker, MoreThanMaxOutputOrAMismatchedCountFails) {
  TokenDeliveryChecker over;
  over.on_submit(request(1, 2));
  over.on_tokens(1, 3, true, true);
  EXPECT_NE(over.finish(drained()).detail.find("more than its max_output_tokens 2"), std::string::npos);

  TokenDeliveryChecker mismatch;
  mismatch.on_submit(request(2, 4));
  mismatch.on_tokens(2, 1, true, false);
  mismatch.on_tokens(2, 1, false, true);
  mismatch.on_done(done(2, 4));
  const CheckResult r = mismatch.finish(drained());
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.detail.find("2 tokens delivered, its timing reports 4"), std::string::npos) << r.detail;
}

TEST(TokenDeliveryChecker, AFailedRequestMayStopEarly) {
  TokenDeliveryChecker c;
  c.on_submit(request(1, 9));
  c.on_tokens(1, 1, true, false);
  c.on_done(done(1, 1, "GPU 3 lost"));
  EXPECT_TRUE(c.finish(drained()).pass);
}

TEST(ResourceBaselineChecker, BackAtBaselinePassesAndALeakFails) {
  RunEnd end = drained();
  end.baseline.kv_used_blocks["rank0 gpu"] = 0;
  end.baseline.memory_used_bytes["gpu0 hbm"] = 1000;
  end.final = end.baseline;
  ResourceBaselineChecker c;
  EXPECT_TRUE(c.finish(end).pass);
  end.final.kv_used_blocks["rank0 gpu"] = 7;
  const CheckResult r = c.finish(end);
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.detail.find("rank0 gpu: 7 KV blocks in use after drain, 0 after start-up"), std::string::npos) << r.detail;
  end.final = end.baseline;
  end.final.memory_used_bytes["gpu0 hbm"] = 1500;
  EXPECT_FALSE(c.finish(end).pass);
}

TEST(ResourceBaselineChecker, IsSkippedWhenTheRunDidNotDrain) {
  RunEnd end;
  end.baseline.kv_used_blocks["rank0 gpu"] = 0;
  end.final.kv_used_blocks["rank0 gpu"] = 12;  // requests still running
  const CheckResult r = ResourceBaselineChecker().finish(end);
  EXPECT_TRUE(r.pass);
  EXPECT_TRUE(r.skipped);
  EXPECT_STREQ(r.status(), "skipped");
}

TEST(ErrorEventChecker, AnErrorRecordFails) {
  RunEnd end = drained();
  EXPECT_TRUE(ErrorEventChecker().finish(end).pass);
  end.error_records = 2;
  end.first_error = R"({"kind":"invariant"})";
  const CheckResult r = ErrorEventChecker().finish(end);
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.detail.find("invariant"), std::string::npos);
}

TEST(DeterminismChecker, ComparesTheHashes) {
  RunEnd end = drained();
  end.event_log_hash = "00000000000000aa";
  EXPECT_TRUE(DeterminismChecker("00000000000000aa").finish(end).pass);
  const CheckResult r = DeterminismChecker("00000000000000ab").finish(end);
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.detail.find("00000000000000ab and 00000000000000aa"), std::string::npos) << r.detail;
}

TEST(StandardCheckers, HaveDistinctNames) {
  std::set<std::string> names;
  for (const auto& c : make_standard_checkers()) EXPECT_TRUE(names.insert(c->name()).second) << c->name();
  EXPECT_GE(names.size(), 4u);
}

TEST(AssertionCheck, BoundsAFigure) {
  const nlohmann::json report = {{"latency_ms", {{"ttft", {{"p90", 420.0}}}}}, {"requests", {{"failed", 0}}}};
  EXPECT_TRUE(check_assertion({"latency_ms.ttft.p90", 500.0, std::nullopt}, report).pass);
  const CheckResult over = check_assertion({"latency_ms.ttft.p90", 400.0, std::nullopt}, report);
  EXPECT_FALSE(over.pass);
  EXPECT_NE(over.detail.find("latency_ms.ttft.p90 = 420, not <= 400"), std::string::npos) << over.detail;
  EXPECT_FALSE(check_assertion({"requests.failed", std::nullopt, 1.0}, report).pass);
  EXPECT_FALSE(check_assertion({"latency_ms.ttft.p95", 1.0, std::nullopt}, report).pass);
  EXPECT_EQ(assertion_check_name({"requests.failed", 0.0, std::nullopt}), "assert requests.failed");
}

}  // namespace checkers_test
}  // namespace nvl::emu
