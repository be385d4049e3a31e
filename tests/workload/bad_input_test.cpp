// Every kind of bad trace input is an rt::InputError naming the file, the line or key path, and what was
// expected.
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "emu/rt/errors.h"
#include "emu/workload/azure_trace.h"
#include "emu/workload/claude_code_trace.h"
#include "emu/workload/coding_agent_profile.h"
#include "emu/workload/mooncake_trace.h"
#include "emu/workload/workload_source.h"
#include "temp_dir.h"

namespace nvl::emu {
namespace bad_input_test {

using test::TempDir;

// Runs `load` and checks that it throws an InputError whose message holds every fragment.
template <typename F>
void expect_input_error(F&& load, std::initializer_list<std::string> fragments) {
  try {
    load();
    ADD_FAILURE() << "expected an InputError";
  } catch (const rt::InputError& e) {
    const std::string msg = e.what();
    for (const auto& f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' not in: " << msg;
  }
}

const std::string kGoodMooncake = R"({"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [0, 1]})";

TEST(MooncakeBadInput, MalformedJsonNamesTheLine) {
  TempDir d;
  const auto p = d.write("t.jsonl", kGoodMooncake + "\n{\"timestamp\": 1, \"input_length\": \n");
  expect_input_error([&] { load_mooncake_trace(p); }, {"t.jsonl", "line 2", "malformed JSON"});
}

TEST(MooncakeBadInput, MissingField) {
  TempDir d;
  const auto p = d.write("t.jsonl", R"({"timestamp": 0, "output_length": 5, "hash_ids": []})");
  expect_input_error([&] { load_mooncake_trace(p); }, {"t.jsonl", "line 1: input_length", "missing key"});
}

TEST(MooncakeBadInput, WrongType) {
  TempDir d;
  const auto p = d.write("t.jsonl", R"({"timestamp": 0, "input_length": "600", "output_length": 5, "hash_ids": []})");
  expect_input_error([&] { load_mooncake_trace(p); }, {"line 1", "input_length", "expected an integer"});
}

TEST(MooncakeBadInput, NegativeLength) {
  TempDir d;
  const auto p = d.write("t.jsonl", R"({"timestamp": 0, "input_length": 600, "output_length": -5, "hash_ids": []})");
  expect_input_error([&] { load_mooncake_trace(p); }, {"line 1: output_length", "expected an integer in [0, 16777216], found -5"});
}

// A request with no prompt has nothing to prefill (the scheduler would refuse it mid-run): the line is
// named instead. An answer of 0 tokens is allowed (it is served as 1, as a real call yields one).
TEST(MooncakeBadInput, EmptyPromptAndHugeLengths) {
  TempDir d;
  const auto p = d.write("t.jsonl", kGoodMooncake + "\n" + R"({"timestamp": 1, "input_length": 0, "output_length": 5, "hash_ids": []})");
  expect_input_error([&] { load_mooncake_trace(p); }, {"t.jsonl", "line 2: input_length", "expected an integer in [1, 16777216], found 0"});
  const auto q = d.write("u.jsonl", R"({"timestamp": 0, "input_length": 600, "output_length": 1e12, "hash_ids": []})");
  expect_input_error([&] { load_mooncake_trace(q); }, {"line 1: output_length", "16777216"});
  const auto ok = d.write("v.jsonl", R"({"timestamp": 0, "input_length": 600, "output_length": 0, "hash_ids": [0]})");
  EXPECT_EQ(load_mooncake_trace(ok).sessions.at(0).requests.at(0).output_tokens, 0);
}

TEST(MooncakeBadInput, BadHashId) {
  TempDir d;
  const auto p = d.write("t.jsonl", R"({"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [0, -1]})");
  expect_input_error([&] { load_mooncake_trace(p); }, {"line 1: hash_ids[1]", "non-negative integer"});
}

TEST(MooncakeBadInput, UnsortedTimestamps) {
  TempDir d;
  const auto p = d.write("t.jsonl", R"({"timestamp": 5, "input_length": 1, "output_length": 1, "hash_ids": [0]})"
                                    "\n" +
                                        kGoodMooncake + "\n");
  expect_input_error([&] { load_mooncake_trace(p); }, {"line 2", "timestamp", "must not decrease"});
}

TEST(MooncakeBadInput, EmptyAndMissingFiles) {
  TempDir d;
  const auto p = d.write("empty.jsonl", "\n  \n");
  expect_input_error([&] { load_mooncake_trace(p); }, {"empty.jsonl", "empty"});
  expect_input_error([&] { load_mooncake_trace(d.path() / "none.jsonl"); }, {"none.jsonl", "cannot open"});
}

const std::string kAzureHeader = "TIMESTAMP,ContextTokens,GeneratedTokens\n";

TEST(AzureBadInput, WrongHeader) {
  TempDir d;
  const auto p = d.write("a.csv", "TIME,Context,Generated\n2023-11-16 18:15:46.6805900,374,44\n");
  expect_input_error([&] { load_azure_trace(p); }, {"a.csv", "line 1", "header"});
}

TEST(AzureBadInput, BadTimestamp) {
  TempDir d;
  const auto p = d.write("a.csv", kAzureHeader + "2023-11-16T18:15:46,374,44\n");
  expect_input_error([&] { load_azure_trace(p); }, {"a.csv", "line 2", "TIMESTAMP", "YYYY-MM-DD"});
}

TEST(AzureBadInput, NegativeAndNonNumericTokens) {
  TempDir d;
  const auto p = d.write("a.csv", kAzureHeader + "2023-11-16 18:15:46.6805900,-374,44\n");
  expect_input_error([&] { load_azure_trace(p); }, {"line 2", "ContextTokens", "an integer from 1 to 16777216"});
  const auto z = d.write("z.csv", kAzureHeader + "2023-11-16 18:15:46.6805900,0,44\n");
  expect_input_error([&] { load_azure_trace(z); }, {"line 2", "ContextTokens", "an integer from 1 to 16777216, got '0'"});
  const auto q = d.write("b.csv", kAzureHeader + "2023-11-16 18:15:46.6805900,374,x\n");
  expect_input_error([&] { load_azure_trace(q); }, {"line 2", "GeneratedTokens"});
}

TEST(AzureBadInput, WrongFieldCount) {
  TempDir d;
  const auto p = d.write("a.csv", kAzureHeader + "2023-11-16 18:15:46.6805900,374\n");
  expect_input_error([&] { load_azure_trace(p); }, {"line 2", "3 comma-separated fields"});
}

TEST(AzureBadInput, UnsortedTimestamps) {
  TempDir d;
  const auto p = d.write("a.csv", kAzureHeader + "2023-11-16 18:15:46.6805900,374,44\n"
                                                 "2023-11-16 18:15:45.0000000,374,44\n");
  expect_input_error([&] { load_azure_trace(p); }, {"line 3", "must not decrease"});
}

TEST(AzureBadInput, HeaderOnly) {
  TempDir d;
  const auto p = d.write("a.csv", kAzureHeader);
  expect_input_error([&] { load_azure_trace(p); }, {"a.csv", "no requests"});
}

std::string claude(const std::string& requests, const std::string& scope = "local") {
  return R"({"id": "c1", "models": ["m"], "block_size": 64, "hash_id_scope": ")" + scope +
         R"(", "tool_tokens": 1, "system_tokens": 1, "requests": [)" + requests + "]}";
}
const std::string kReq = R"({"t": 0.0, "type": "n", "model": "m", "in": 130, "out": 5, "hash_ids": [1, 2]})";

TEST(ClaudeCodeBadInput, MalformedJson) {
  TempDir d;
  const auto p = d.write("c.json", claude(kReq).substr(0, 40));
  expect_input_error([&] { load_claude_code_trace(p); }, {"c.json", "malformed JSON"});
}

TEST(ClaudeCodeBadInput, MissingRequests) {
  TempDir d;
  const auto p = d.write("c.json", R"({"id": "c1", "block_size": 64, "hash_id_scope": "local"})");
  expect_input_error([&] { load_claude_code_trace(p); }, {"c.json", "requests", "missing key"});
}

TEST(ClaudeCodeBadInput, NegativeOrEmptyInNamesTheKeyPath) {
  TempDir d;
  const auto p = d.write("c.json", claude(kReq + R"(, {"t": 1.0, "type": "n", "in": -3, "out": 5, "hash_ids": []})"));
  expect_input_error([&] { load_claude_code_trace(p); }, {"c.json", "requests[1].in", "expected an integer in [1, 16777216], found -3"});
  const auto q = d.write("d.json", claude(kReq + R"(, {"t": 1.0, "type": "n", "in": 0, "out": 0, "hash_ids": []})"));
  expect_input_error([&] { load_claude_code_trace(q); }, {"d.json", "requests[1].in", "found 0"});
}

TEST(ClaudeCodeBadInput, UnknownTypeAndScope) {
  TempDir d;
  const auto p = d.write("c.json", claude(R"({"t": 0.0, "type": "x", "in": 3, "out": 5, "hash_ids": []})"));
  expect_input_error([&] { load_claude_code_trace(p); }, {"requests[0].type", "expected \"n\", \"s\" or \"subagent\""});
  const auto q = d.write("d.json", claude(kReq, "weird"));
  expect_input_error([&] { load_claude_code_trace(q); }, {"d.json", "hash_id_scope"});
}

TEST(ClaudeCodeBadInput, DecreasingTimes) {
  TempDir d;
  const auto p = d.write("c.json", claude(R"({"t": 5.0, "type": "n", "in": 3, "out": 5, "hash_ids": []}, )" + kReq));
  expect_input_error([&] { load_claude_code_trace(p); }, {"requests[1].t", "must not decrease"});
}

TEST(ClaudeCodeBadInput, BadIdInsideASubagent) {
  TempDir d;
  const auto p = d.write(
      "c.json", claude(kReq + R"(, {"t": 1.0, "type": "subagent", "agent_id": "a1", "requests": [)" + kReq +
                       R"(, {"t": 2.0, "type": "s", "in": 3, "out": 5, "hash_ids": ["x"]}]})"));
  expect_input_error([&] { load_claude_code_trace(p); }, {"c.json", "requests[1].requests[1].hash_ids[0]"});
}

TEST(ClaudeCodeBadInput, EmptyFolder) {
  TempDir d;
  expect_input_error([&] { load_claude_code_trace(d.path()); }, {"no .json trace files"});
}

TEST(SourceBadInput, UnknownSourcesAndGeneratorParameters) {
  expect_input_error([] { open_workload_source("/no/such/trace.jsonl"); }, {"/no/such/trace.jsonl", "no such file"});
  expect_input_error([] { open_workload_source("gen:other"); }, {"unknown generator"});
  expect_input_error([] { open_workload_source("gen:codex:trials=x"); }, {"trials", "non-negative integer"});
  expect_input_error([] { open_workload_source("gen:codex:speed=3"); }, {"speed", "unknown parameter"});
  for (const char* scale : {"0", "-2", "x", "65", "2x"}) {
    expect_input_error([&] { open_workload_source(std::string("gen:codex:context_scale=") + scale); },
                       {"context_scale", "above 0 and at most 64"});
  }
}

// A folder as the trace collections ship it (the trace beside a README and license) is read as its one
// trace; a folder with none or with several is named.
TEST(SourceBadInput, AFolderIsItsOneTrace) {
  TempDir d;
  d.write("mooncake/README.md", "a trace");
  d.write("mooncake/LICENSE", "Apache-2.0");
  d.write("mooncake/t.jsonl", kGoodMooncake + "\n");
  EXPECT_EQ(open_workload_source((d.path() / "mooncake").string()).workload.sessions.size(), 1u);
  d.write("claude/LICENSE", "MIT");
  d.write("claude/traces/c.json", claude(kReq));
  EXPECT_EQ(open_workload_source((d.path() / "claude").string()).workload.sessions.at(0).requests.size(), 1u);
  d.write("two/a.jsonl", kGoodMooncake + "\n");
  d.write("two/b.csv", kAzureHeader + "2023-11-16 18:15:46.6805900,374,44\n");
  expect_input_error([&] { open_workload_source((d.path() / "two").string()); }, {"two", "more than one trace", "a.jsonl", "b.csv", "name one"});
  d.write("none/README.md", "nothing");
  expect_input_error([&] { open_workload_source((d.path() / "none").string()); }, {"none", "no trace in this folder"});
}

TEST(ProfileBadInput, NamesTheKeyPath) {
  expect_input_error([] { CodingAgentProfile::parse("{", "p.json"); }, {"p.json", "malformed JSON"});
  expect_input_error([] { CodingAgentProfile::parse(R"({"name": "x"})", "p.json"); }, {"p.json", "tolerance", "missing"});
}

}  // namespace bad_input_test
}  // namespace nvl::emu
