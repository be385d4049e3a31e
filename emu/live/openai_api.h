#pragma once
// OpenAI's wire format for /v1/completions and /v1/chat/completions: checking a request body, and
// the response bodies and server-sent-event chunks (with and without streaming). Bad fields are an
// ApiError (400, or 404 for a model the server does not serve). Unknown fields are ignored, as OpenAI's API
// does; known fields that would change the answer in a way the emulator cannot honour (logprobs, n > 1,
// a response_format other than text, a forced tool call, echo, best_of, suffix) are a 400 naming the field.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace nvl::emu::live {

enum class Endpoint { completions, chat };

struct CompletionRequest {
  Endpoint endpoint = Endpoint::completions;
  std::string model;
  // What the model reads: the prompt; chat: the tool schemas (JSON) and then each message as a
  // "role: content" line, with its tool calls' names and arguments.
  std::string prompt_text;
  std::int64_t max_tokens = 0;
  std::vector<std::string> stop;  // generation ends before the first of these in the answer
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  // SGLang's P/D fields, added by a router that sends the request to a prefill worker and a decode
  // worker at once (sgl-router's PD mode): the prefill worker's bootstrap port and the pair's room.
  // bootstrap_host is checked to be a string and not used: every worker is on this host.
  struct Bootstrap {
    std::int64_t port = 0;
    std::uint64_t room = 0;
  };
  std::optional<Bootstrap> bootstrap;
};

// OpenAI's documented default for /v1/completions; chat has none, so it gets a larger one.
inline constexpr std::int64_t kDefaultCompletionTokens = 16;
inline constexpr std::int64_t kDefaultChatTokens = 256;

CompletionRequest parse_completion_request(Endpoint endpoint, std::string_view body, const std::string& served_model);

// What one response carries about the request as a whole.
struct ResponseContext {
  std::string id;  // "cmpl-N" or "chatcmpl-N"
  std::int64_t created_s = 0;
  std::string model;
  Endpoint endpoint = Endpoint::completions;
};

// A streaming chunk (the JSON after "data: "). `first` adds the chat role; finish_reason ends it.
nlohmann::json stream_chunk(const ResponseContext& ctx, std::string_view text, bool first,
                            const std::optional<std::string>& finish_reason);
// The last chunk when stream_options.include_usage is set: no choices, only usage.
nlohmann::json usage_chunk(const ResponseContext& ctx, std::int64_t prompt_tokens, std::int64_t completion_tokens);
nlohmann::json full_response(const ResponseContext& ctx, std::string_view text, const std::string& finish_reason,
                             std::int64_t prompt_tokens, std::int64_t completion_tokens);
nlohmann::json model_list(const std::string& model, std::int64_t created_s);

}  // namespace nvl::emu::live
