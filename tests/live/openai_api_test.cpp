#include "emu/live/openai_api.h"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "emu/live/api_error.h"

namespace nvl::emu::live {
namespace openai_api_test {

ApiError refused(Endpoint e, const std::string& body) {
  try {
    parse_completion_request(e, body, "m");
  } catch (const ApiError& err) {
    return err;
  }
  ADD_FAILURE() << "accepted: " << body;
  return ApiError(0, "", "");
}

TEST(OpenAiApi, ReadsACompletionRequest) {
  const auto r = parse_completion_request(
      Endpoint::completions, R"({"model":"m","prompt":"hi","max_tokens":5,"stream":true,"stream_options":{"include_usage":true}})",
      "m");
  EXPECT_EQ(r.prompt_text, "hi");
  EXPECT_EQ(r.max_tokens, 5);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(parse_completion_request(Endpoint::completions, R"({"model":"m","prompt":["x"]})", "m").max_tokens,
            kDefaultCompletionTokens);
}

TEST(OpenAiApi, ChatMessagesBecomeRoleLines) {
  const auto r = parse_completion_request(
      Endpoint::chat,
      R"({"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_completion_tokens":3})",
      "m");
  EXPECT_EQ(r.prompt_text, "system: be brief\nuser: hi\n");
  EXPECT_EQ(r.max_tokens, 3);
}

TEST(OpenAiApi, BadFieldsAre400WithTheParam) {
  EXPECT_EQ(refused(Endpoint::completions, "{not json").status(), 400);
  EXPECT_EQ(refused(Endpoint::completions, "[1]").status(), 400);
  const auto missing = refused(Endpoint::completions, R"({"model":"m"})");
  EXPECT_EQ(missing.status(), 400);
  EXPECT_EQ(missing.body()["error"]["param"], "prompt");
  EXPECT_EQ(missing.body()["error"]["type"], "invalid_request_error");
  EXPECT_EQ(refused(Endpoint::completions, R"({"model":"m","prompt":"x","max_tokens":0})").body()["error"]["param"],
            "max_tokens");
  EXPECT_EQ(refused(Endpoint::completions, R"({"model":"m","prompt":"x","max_tokens":"5"})").status(), 400);
  EXPECT_EQ(refused(Endpoint::completions, R"({"model":"m","prompt":"x","stream":"yes"})").status(), 400);
  EXPECT_EQ(refused(Endpoint::completions, R"({"model":"m","prompt":"x","n":2})").status(), 400);
  EXPECT_EQ(refused(Endpoint::chat, R"({"model":"m","messages":[]})").status(), 400);
  EXPECT_EQ(refused(Endpoint::chat, R"({"model":"m","messages":[{"role":"robot","content":"x"}]})").body()["error"]["param"],
            "messages[0].role");
}

// Coding-agent traffic is mostly tool schemas and tool calls: the model reads them, so they count.
TEST(OpenAiApi, ToolSchemasAndToolCallsAreInThePrompt) {
  const auto r = parse_completion_request(Endpoint::chat, R"({"model":"m",
      "tools":[{"type":"function","function":{"name":"read_file","parameters":{"type":"object"}}}],
      "messages":[{"role":"user","content":"open a.txt"},
                  {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",
                    "function":{"name":"read_file","arguments":"{\"path\":\"a.txt\"}"}}]},
                  {"role":"tool","tool_call_id":"c1","content":"hello"}]})",
                                          "m");
  EXPECT_EQ(r.prompt_text,
            R"({"function":{"name":"read_file","parameters":{"type":"object"}},"type":"function"})"
            "\nuser: open a.txt\nassistant: \nread_file({\"path\":\"a.txt\"})\ntool: hello\n");
  const auto bad = refused(Endpoint::chat, R"({"model":"m","messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":{}}}]}]})");
  EXPECT_EQ(bad.body()["error"]["param"], "messages[0].tool_calls[0].function.arguments");
  EXPECT_EQ(refused(Endpoint::chat, R"({"model":"m","tools":{},"messages":[{"role":"user","content":"x"}]})")
                .body()["error"]["param"],
            "tools");
}

TEST(OpenAiApi, StopIsAStringOrUpToFourStrings) {
  EXPECT_EQ(parse_completion_request(Endpoint::completions, R"({"model":"m","prompt":"x","stop":"END"})", "m").stop,
            std::vector<std::string>{"END"});
  EXPECT_EQ(parse_completion_request(Endpoint::completions, R"({"model":"m","prompt":"x","stop":["a","b"]})", "m").stop,
            (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(parse_completion_request(Endpoint::completions, R"({"model":"m","prompt":"x","stop":null})", "m").stop.empty());
  for (const char* body : {R"({"model":"m","prompt":"x","stop":["a","b","c","d","e"]})",
                           R"({"model":"m","prompt":"x","stop":""})", R"({"model":"m","prompt":"x","stop":[3]})",
                           R"({"model":"m","prompt":"x","stop":7})"}) {
    EXPECT_EQ(refused(Endpoint::completions, body).body()["error"]["param"], "stop") << body;
  }
}

// Fields that would change the answer in ways the emulator does not produce are refused by name; their
// neutral values pass.
TEST(OpenAiApi, UnsupportedAnswerFieldsAre400ByName) {
  const std::vector<std::pair<Endpoint, std::string>> refusals = {
      {Endpoint::chat, R"("logprobs":true)"},          {Endpoint::chat, R"("top_logprobs":3)"},
      {Endpoint::completions, R"("logprobs":2)"},      {Endpoint::chat, R"("response_format":{"type":"json_object"})"},
      {Endpoint::chat, R"("tool_choice":"required")"}, {Endpoint::completions, R"("echo":true)"},
      {Endpoint::completions, R"("best_of":3)"},       {Endpoint::completions, R"("suffix":"}")"},
      {Endpoint::chat, R"("n":2)"}};
  for (const auto& [endpoint, field] : refusals) {
    const std::string body = endpoint == Endpoint::chat
                                 ? R"({"model":"m","messages":[{"role":"user","content":"x"}],)" + field + "}"
                                 : R"({"model":"m","prompt":"x",)" + field + "}";
    const std::string key = field.substr(1, field.find('"', 1) - 1);
    const auto e = refused(endpoint, body);
    EXPECT_EQ(e.status(), 400) << body;
    EXPECT_EQ(e.body()["error"]["param"], key) << body;
  }
  for (const char* neutral : {R"("logprobs":false)", R"("response_format":{"type":"text"})", R"("tool_choice":"auto")",
                              R"("n":1)", R"("user":"anyone")"}) {
    EXPECT_NO_THROW(parse_completion_request(
        Endpoint::chat, std::string(R"({"model":"m","messages":[{"role":"user","content":"x"}],)") + neutral + "}", "m"))
        << neutral;
  }
}

TEST(OpenAiApi, UnknownModelIs404) {
  const auto e = refused(Endpoint::completions, R"({"model":"gpt-9","prompt":"x"})");
  EXPECT_EQ(e.status(), 404);
  EXPECT_EQ(e.body()["error"]["code"], "model_not_found");
}

TEST(OpenAiApi, ChunksFollowOpenAiShapes) {
  ResponseContext chat{.id = "chatcmpl-1", .created_s = 5, .model = "m", .endpoint = Endpoint::chat};
  const auto first = stream_chunk(chat, "a ", true, std::nullopt);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(first["choices"][0]["delta"]["content"], "a ");
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  const auto last = stream_chunk(chat, "", false, std::string("length"));
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(last["choices"][0]["delta"].contains("content"));
  const auto whole = full_response(chat, "a b ", "length", 7, 2);
  EXPECT_EQ(whole["choices"][0]["message"]["content"], "a b ");
  EXPECT_EQ(whole["usage"]["total_tokens"], 9);
  ResponseContext text{.id = "cmpl-1", .created_s = 5, .model = "m", .endpoint = Endpoint::completions};
  EXPECT_EQ(stream_chunk(text, "a ", true, std::nullopt)["choices"][0]["text"], "a ");
  EXPECT_EQ(usage_chunk(text, 3, 4)["usage"]["completion_tokens"], 4);
  EXPECT_TRUE(usage_chunk(text, 3, 4)["choices"].empty());
}

}  // namespace openai_api_test
}  // namespace nvl::emu::live
