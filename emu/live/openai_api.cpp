#include "emu/live/openai_api.h"

#include <set>

#include "emu/live/api_error.h"

namespace nvl::emu::live {

namespace {

// Far beyond any rank's KV cache (whose limit gives 413), but keeps the sums in range.
constexpr std::int64_t kMaxTokensLimit = 1'000'000'000;

const std::set<std::string, std::less<>> kRoles = {"system", "developer", "user", "assistant", "tool"};

std::string message_content(const nlohmann::json& content, const std::string& param) {
  if (content.is_string()) return content.get<std::string>();
  if (content.is_array()) {
    std::string text;
    for (const auto& part : content) {
      if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string()) {
        throw ApiError::bad_request("each content part must be {\"type\": \"text\", \"text\": string}", param);
      }
      text += part["text"].get<std::string>();
    }
    return text;
  }
  if (content.is_null()) return "";
  throw ApiError::bad_request("content must be a string or an array of text parts", param);
}

bool present(const nlohmann::json& body, const char* key) { return body.contains(key) && !body[key].is_null(); }

// The tool schemas as the model reads them: chat templates render them as JSON into the prompt.
std::string tool_schemas(const nlohmann::json& body) {
  if (!present(body, "tools")) return "";
  const auto& tools = body["tools"];
  if (!tools.is_array()) throw ApiError::bad_request("'tools' must be an array", "tools");
  std::string text;
  for (std::size_t i = 0; i < tools.size(); ++i) {
    if (!tools[i].is_object()) throw ApiError::bad_request("each tool must be an object", "tools[" + std::to_string(i) + "]");
    text += tools[i].dump() + "\n";
  }
  return text;
}

// An assistant message's tool calls as the model reads them: each function's name and arguments.
std::string tool_calls_text(const nlohmann::json& m, const std::string& param) {
  if (!present(m, "tool_calls")) return "";
  const auto& calls = m["tool_calls"];
  if (!calls.is_array()) throw ApiError::bad_request("'tool_calls' must be an array", param + ".tool_calls");
  std::string text;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const std::string at = param + ".tool_calls[" + std::to_string(i) + "].function";
    const auto& c = calls[i];
    if (!c.is_object() || !c.contains("function") || !c["function"].is_object()) {
      throw ApiError::bad_request("each tool call must have a 'function' object", at);
    }
    const auto& f = c["function"];
    if (!f.contains("name") || !f["name"].is_string()) throw ApiError::bad_request("'name' must be a string", at + ".name");
    if (!f.contains("arguments") || !f["arguments"].is_string()) {
      throw ApiError::bad_request("'arguments' must be a string (JSON text)", at + ".arguments");
    }
    text += f["name"].get<std::string>() + "(" + f["arguments"].get<std::string>() + ")\n";
  }
  return text;
}

std::string chat_prompt(const nlohmann::json& body) {
  if (!body.contains("messages")) throw ApiError::bad_request("'messages' is required", "messages");
  const auto& messages = body["messages"];
  if (!messages.is_array() || messages.empty()) {
    throw ApiError::bad_request("'messages' must be a non-empty array", "messages");
  }
  std::string text = tool_schemas(body);
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const std::string param = "messages[" + std::to_string(i) + "]";
    const auto& m = messages[i];
    if (!m.is_object()) throw ApiError::bad_request("each message must be an object", param);
    if (!m.contains("role") || !m["role"].is_string() || !kRoles.contains(m["role"].get<std::string>())) {
      throw ApiError::bad_request("role must be one of system, developer, user, assistant, tool", param + ".role");
    }
    text += m["role"].get<std::string>() + ": " + message_content(m.value("content", nlohmann::json()), param + ".content") +
            "\n" + tool_calls_text(m, param);
  }
  return text;
}

std::string completion_prompt(const nlohmann::json& body) {
  if (!body.contains("prompt")) throw ApiError::bad_request("'prompt' is required", "prompt");
  const auto& p = body["prompt"];
  if (p.is_string()) return p.get<std::string>();
  if (p.is_array() && p.size() == 1 && p[0].is_string()) return p[0].get<std::string>();
  throw ApiError::bad_request("'prompt' must be a string (or an array of one string)", "prompt");
}

std::int64_t max_tokens(const nlohmann::json& body, Endpoint endpoint) {
  const char* key = endpoint == Endpoint::chat && body.contains("max_completion_tokens") ? "max_completion_tokens"
                                                                                          : "max_tokens";
  if (!present(body, key)) {
    return endpoint == Endpoint::chat ? kDefaultChatTokens : kDefaultCompletionTokens;
  }
  const auto& v = body[key];
  if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > kMaxTokensLimit) {
    throw ApiError::bad_request(std::string("'") + key + "' must be an integer from 1 to " +
                                    std::to_string(kMaxTokensLimit),
                                key);
  }
  return v.get<std::int64_t>();
}

// OpenAI's limit: up to 4 stop sequences.
constexpr std::size_t kMaxStops = 4;

std::vector<std::string> stop_sequences(const nlohmann::json& body) {
  if (!present(body, "stop")) return {};
  const auto& v = body["stop"];
  std::vector<std::string> stops;
  if (v.is_string()) {
    stops.push_back(v.get<std::string>());
  } else if (v.is_array() && v.size() <= kMaxStops) {
    for (const auto& s : v) {
      if (!s.is_string()) throw ApiError::bad_request("'stop' must be a string or an array of strings", "stop");
      stops.push_back(s.get<std::string>());
    }
  } else {
    throw ApiError::bad_request("'stop' must be a string or an array of up to 4 strings", "stop");
  }
  for (const auto& s : stops) {
    if (s.empty()) throw ApiError::bad_request("a stop sequence must not be empty", "stop");
  }
  return stops;
}

// Fields that change the answer in ways the emulator does not produce: refused, never silently ignored.
void refuse_unsupported(const nlohmann::json& j, Endpoint endpoint) {
  const auto refuse = [](const char* key, const std::string& why) {
    throw ApiError::bad_request("'" + std::string(key) + "' is not supported: " + why, key);
  };
  if (present(j, "n") && !(j["n"].is_number_integer() && j["n"].get<long long>() == 1)) {
    refuse("n", "only n = 1 is (one answer per request)");
  }
  const bool wants_logprobs = endpoint == Endpoint::chat
                                  ? present(j, "logprobs") && !(j["logprobs"].is_boolean() && !j["logprobs"].get<bool>())
                                  : present(j, "logprobs") && !(j["logprobs"].is_number_integer() &&
                                                                j["logprobs"].get<long long>() == 0);
  if (wants_logprobs) refuse("logprobs", "the emulated model has no token probabilities");
  if (present(j, "top_logprobs")) refuse("top_logprobs", "the emulated model has no token probabilities");
  if (present(j, "response_format") &&
      !(j["response_format"].is_object() && j["response_format"].value("type", "") == "text")) {
    refuse("response_format", "the answer is filler text; only {\"type\": \"text\"} is");
  }
  if (present(j, "tool_choice") &&
      !(j["tool_choice"].is_string() && (j["tool_choice"] == "auto" || j["tool_choice"] == "none"))) {
    refuse("tool_choice", "the emulated model never calls a tool; only \"auto\" and \"none\" are");
  }
  if (present(j, "echo") && !(j["echo"].is_boolean() && !j["echo"].get<bool>())) refuse("echo", "the answer is new text only");
  if (present(j, "best_of") && !(j["best_of"].is_number_integer() && j["best_of"].get<long long>() == 1)) {
    refuse("best_of", "only best_of = 1 is");
  }
  if (present(j, "suffix")) refuse("suffix", "insertion is not modelled");
}

// SGLang's bootstrap fields: all or none (one value each: a batch of prompts is not taken).
std::optional<CompletionRequest::Bootstrap> bootstrap(const nlohmann::json& j) {
  if (!present(j, "bootstrap_host") && !present(j, "bootstrap_port") && !present(j, "bootstrap_room")) return std::nullopt;
  if (!present(j, "bootstrap_host") || !j["bootstrap_host"].is_string()) {
    throw ApiError::bad_request("'bootstrap_host' must be a string (with bootstrap_port and bootstrap_room)",
                                "bootstrap_host");
  }
  const auto& port = j.contains("bootstrap_port") ? j["bootstrap_port"] : nlohmann::json();
  if (!port.is_number_integer() || port.get<long long>() < 1 || port.get<long long>() > 65535) {
    throw ApiError::bad_request("'bootstrap_port' must be a port number (1 to 65535)", "bootstrap_port");
  }
  const auto& room = j.contains("bootstrap_room") ? j["bootstrap_room"] : nlohmann::json();
  if (!room.is_number_unsigned() && !(room.is_number_integer() && room.get<long long>() >= 0)) {
    throw ApiError::bad_request("'bootstrap_room' must be a non-negative integer", "bootstrap_room");
  }
  return CompletionRequest::Bootstrap{port.get<std::int64_t>(), room.get<std::uint64_t>()};
}

}  // namespace

CompletionRequest parse_completion_request(Endpoint endpoint, std::string_view body, const std::string& served_model) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded()) throw ApiError::bad_request("the body is not valid JSON");
  if (!j.is_object()) throw ApiError::bad_request("the body must be a JSON object");
  CompletionRequest r;
  r.endpoint = endpoint;
  if (!j.contains("model") || !j["model"].is_string()) throw ApiError::bad_request("'model' must be a string", "model");
  r.model = j["model"].get<std::string>();
  if (r.model != served_model) {
    throw ApiError(404, "The model `" + r.model + "` does not exist. This server serves `" + served_model + "`.",
                   "invalid_request_error", "model", "model_not_found");
  }
  refuse_unsupported(j, endpoint);
  r.prompt_text = endpoint == Endpoint::chat ? chat_prompt(j) : completion_prompt(j);
  r.max_tokens = max_tokens(j, endpoint);
  r.stop = stop_sequences(j);
  r.bootstrap = bootstrap(j);
  if (present(j, "stream")) {
    if (!j["stream"].is_boolean()) throw ApiError::bad_request("'stream' must be a boolean", "stream");
    r.stream = j["stream"].get<bool>();
  }
  if (present(j, "stream_options")) {
    const auto& o = j["stream_options"];
    if (!o.is_object()) throw ApiError::bad_request("'stream_options' must be an object", "stream_options");
    if (!r.stream) throw ApiError::bad_request("'stream_options' needs 'stream': true", "stream_options");
    if (o.contains("include_usage")) {
      if (!o["include_usage"].is_boolean()) {
        throw ApiError::bad_request("'include_usage' must be a boolean", "stream_options.include_usage");
      }
      r.include_usage = o["include_usage"].get<bool>();
    }
  }
  return r;
}

nlohmann::json stream_chunk(const ResponseContext& ctx, std::string_view text, bool first,
                            const std::optional<std::string>& finish_reason) {
  nlohmann::json choice = {{"index", 0}, {"finish_reason", nullptr}};
  if (finish_reason) choice["finish_reason"] = *finish_reason;
  nlohmann::json chunk = {{"id", ctx.id}, {"created", ctx.created_s}, {"model", ctx.model}};
  if (ctx.endpoint == Endpoint::chat) {
    nlohmann::json delta = nlohmann::json::object();
    if (first) delta["role"] = "assistant";
    if (!text.empty() || first) delta["content"] = std::string(text);
    choice["delta"] = delta;
    choice["logprobs"] = nullptr;
    chunk["object"] = "chat.completion.chunk";
  } else {
    choice["text"] = std::string(text);
    choice["logprobs"] = nullptr;
    chunk["object"] = "text_completion";
  }
  chunk["choices"] = nlohmann::json::array({choice});
  return chunk;
}

namespace {

nlohmann::json usage(std::int64_t prompt_tokens, std::int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

}  // namespace

nlohmann::json usage_chunk(const ResponseContext& ctx, std::int64_t prompt_tokens, std::int64_t completion_tokens) {
  return {{"id", ctx.id},
          {"object", ctx.endpoint == Endpoint::chat ? "chat.completion.chunk" : "text_completion"},
          {"created", ctx.created_s},
          {"model", ctx.model},
          {"choices", nlohmann::json::array()},
          {"usage", usage(prompt_tokens, completion_tokens)}};
}

nlohmann::json full_response(const ResponseContext& ctx, std::string_view text, const std::string& finish_reason,
                             std::int64_t prompt_tokens, std::int64_t completion_tokens) {
  nlohmann::json choice = {{"index", 0}, {"finish_reason", finish_reason}, {"logprobs", nullptr}};
  if (ctx.endpoint == Endpoint::chat) {
    choice["message"] = {{"role", "assistant"}, {"content", std::string(text)}};
  } else {
    choice["text"] = std::string(text);
  }
  return {{"id", ctx.id},
          {"object", ctx.endpoint == Endpoint::chat ? "chat.completion" : "text_completion"},
          {"created", ctx.created_s},
          {"model", ctx.model},
          {"choices", nlohmann::json::array({choice})},
          {"usage", usage(prompt_tokens, completion_tokens)}};
}

nlohmann::json model_list(const std::string& model, std::int64_t created_s) {
  return {{"object", "list"},
          {"data", nlohmann::json::array({{{"id", model},
                                           {"object", "model"},
                                           {"created", created_s},
                                           {"owned_by", "nvl72emu"}}})}};
}

}  // namespace nvl::emu::live
