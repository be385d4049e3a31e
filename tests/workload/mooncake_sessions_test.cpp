// The agentic Mooncake rows other simulators replay (Dynamo's mocker): lines sharing a session_id are one
// closed-loop session whose later turns wait `delay` (or the timestamp gap) after the previous answer, a
// stated block size for the hash ids, and bad rows named by line and key.
#include <string>

#include <gtest/gtest.h>

#include "emu/rt/errors.h"
#include "emu/workload/mooncake_trace.h"
#include "temp_dir.h"

namespace nvl::emu {
namespace mooncake_sessions_test {

using test::TempDir;

const std::string kTwoSessions =
    R"({"session_id": "a", "request_id": "a1", "timestamp": 0, "input_length": 1024, "output_length": 10, "hash_ids": [1, 2]}
{"session_id": 7, "timestamp": 100, "input_length": 512, "output_length": 5, "hash_ids": [7]}
{"session_id": "a", "request_id": "a2", "delay": 250, "wait_for": ["a1"], "input_length": 1536, "output_length": 3, "hash_ids": [1, 2, 3]}
{"session_id": 7, "timestamp": 400, "input_length": 1024, "output_length": 5, "hash_ids": [7, 8]}
{"timestamp": 500, "input_length": 512, "output_length": 1, "hash_ids": [9]}
{"session_id": "c", "timestamp": 600, "input_length": 512, "output_length": 2, "hash_ids": [20]}
{"session_id": "c", "delay_ms": 100, "tool_wait_ms": 50.5, "input_length": 1024, "output_length": 2, "hash_ids": [20, 21]}
)";

TEST(MooncakeSessions, TurnsOfASessionFormOneClosedLoopSession) {
  TempDir d;
  const Workload w = load_mooncake_trace(d.write("agentic.jsonl", kTwoSessions));
  ASSERT_EQ(w.sessions.size(), 4u);  // a, 7, the lone line 5, c
  const Session& a = w.sessions[0];
  EXPECT_EQ(a.labels.session_id, "a");
  ASSERT_EQ(a.requests.size(), 2u);
  EXPECT_EQ(*a.recorded_start, rt::Time::zero());
  EXPECT_EQ(a.requests[1].think_time, rt::ms(250));
  EXPECT_EQ(a.requests[1].prompt_tokens, 1536);
  // The second turn extends the first: its first two ids are the first turn's.
  EXPECT_EQ(a.requests[1].block_hashes.ids()[0], a.requests[0].block_hashes.ids()[0]);
  EXPECT_EQ(a.requests[1].block_hashes.ids()[1], a.requests[0].block_hashes.ids()[1]);
  const Session& b = w.sessions[1];
  EXPECT_EQ(b.labels.session_id, "7");
  ASSERT_EQ(b.requests.size(), 2u);
  EXPECT_EQ(*b.recorded_start, rt::Time::zero() + rt::ms(100));
  EXPECT_EQ(b.requests[1].think_time, rt::ms(300)) << "no delay: the gap between the two timestamps";
  EXPECT_EQ(w.sessions[2].labels.session_id, "line 5");
  EXPECT_EQ(w.sessions[2].requests.size(), 1u);
  // delay_ms is delay; tool_wait_ms adds to it.
  EXPECT_EQ(w.sessions[3].requests[1].think_time, rt::us(150'500));
  for (const Session& s : w.sessions) EXPECT_EQ(s.block_size_tokens, 512);
}

TEST(MooncakeSessions, TheCallerStatesTheBlockSize) {
  TempDir d;
  LoadOptions o;
  o.trace_block_tokens = 64;
  const Workload w = load_mooncake_trace(d.write("agentic.jsonl", kTwoSessions), o);
  for (const Session& s : w.sessions) EXPECT_EQ(s.block_size_tokens, 64);
}

TEST(MooncakeSessions, MaxSessionsStillReadsTheTurnsOfOpenSessions) {
  TempDir d;
  LoadOptions o;
  o.max_sessions = 1;
  const Workload w = load_mooncake_trace(d.write("agentic.jsonl", kTwoSessions), o);
  ASSERT_EQ(w.sessions.size(), 1u);
  EXPECT_EQ(w.sessions[0].requests.size(), 2u);
}

void expect_error(const std::string& lines, std::initializer_list<std::string> fragments) {
  TempDir d;
  const auto p = d.write("bad.jsonl", lines);
  try {
    load_mooncake_trace(p);
    ADD_FAILURE() << "expected an InputError";
  } catch (const rt::InputError& e) {
    const std::string msg = e.what();
    for (const auto& f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' not in: " << msg;
  }
}

TEST(MooncakeSessions, BadRowsNameTheLineAndKey) {
  const std::string first = R"({"session_id": "a", "request_id": "a1", "timestamp": 0, "input_length": 8, "output_length": 1, "hash_ids": [1]})";
  expect_error(R"({"session_id": "a", "timestamp": 0, "delay": 5, "input_length": 8, "output_length": 1, "hash_ids": [1]})",
               {"line 1", "delay", "first request"});
  expect_error(R"({"session_id": "a", "input_length": 8, "output_length": 1, "hash_ids": [1]})", {"line 1", "timestamp"});
  expect_error(first + "\n" + R"({"session_id": "a", "delay": 1, "wait_for": ["zz"], "input_length": 8, "output_length": 1, "hash_ids": [1]})",
               {"line 2", "wait_for", "previous request"});
  expect_error(first + "\n" + R"({"session_id": "a", "delay": -1, "input_length": 8, "output_length": 1, "hash_ids": [1]})",
               {"line 2", "delay"});
  expect_error(R"({"session_id": [1], "timestamp": 0, "input_length": 8, "output_length": 1, "hash_ids": [1]})",
               {"line 1", "session_id", "string or an integer"});
}

}  // namespace mooncake_sessions_test
}  // namespace nvl::emu
