#include "emu/workload/mooncake_trace.h"

#include <cmath>
#include <map>
#include <string_view>

#include "emu/rt/errors.h"
#include "emu/workload/block_namespace.h"
#include "emu/workload/hash_chain_builder.h"
#include "emu/rt/json_reader.h"
#include "emu/workload/trace_file.h"

namespace nvl::emu {

namespace {
// About 31 years: far beyond a trace's span, and its nanoseconds fit in 64 bits.
constexpr std::int64_t kMaxTimestampMs = 1'000'000'000'000;
constexpr double kNsPerMs = 1e6;

// A session id or request id: a string, or an integer written as one.
std::string id_of(const nlohmann::json& v, rt::JsonReader& f, std::string_view key) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  f.fail(key, "expected a string or an integer");
}

// What a later turn waits for after the previous turn's answer: delay (or delay_ms) plus tool_wait_ms.
rt::Duration gap_ms(rt::JsonReader& f, bool& given) {
  double ms = 0;
  given = false;
  for (std::string_view key : {"delay", "delay_ms", "tool_wait_ms"}) {
    if (!f.has(key)) continue;
    ms += f.number(key);
    given = given || key != "tool_wait_ms";
  }
  if (ms > static_cast<double>(kMaxTimestampMs)) f.fail("delay", "beyond any trace's span");
  return rt::ns(std::llround(ms * kNsPerMs));
}

struct OpenSession {
  std::size_t index = 0;  // into Workload::sessions
  std::int64_t last_ms = 0;
  bool last_has_timestamp = false;
  std::string last_request_id;
  HashChainBuilder chain;
};

}  // namespace

Workload load_mooncake_trace(const std::filesystem::path& path, const LoadOptions& options) {
  const std::string file = path.string();
  const std::string text = read_trace_file(path);
  const BlockNamespace ns("mooncake/" + path.filename().string());
  const std::int32_t block_tokens = options.trace_block_tokens > 0 ? options.trace_block_tokens : kMooncakeBlockTokens;
  Workload w;
  w.source = file;
  std::int64_t previous_ms = 0;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  std::vector<std::uint64_t> hashes;
  std::map<std::string, OpenSession> sessions;  // by session_id
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = "line " + std::to_string(line_no);
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) throw rt::InputError(file, where, "malformed JSON (expected one request object a line)");
    rt::JsonReader f(j, file, where);
    OpenSession* turn_of = nullptr;  // the session this line continues
    std::string session_id;
    if (f.has("session_id")) {
      session_id = id_of(f.value("session_id"), f, "session_id");
      const auto it = sessions.find(session_id);
      if (it != sessions.end()) turn_of = &it->second;
    }
    if (turn_of == nullptr && w.sessions.size() >= options.max_sessions) {
      if (sessions.empty()) break;  // no session left open that a later line could continue
      continue;
    }

    Request r;
    r.prompt_tokens = f.integer("input_length", kMinPromptTokens, kMaxRequestTokens);
    r.output_tokens = f.integer("output_length", 0, kMaxRequestTokens);
    const bool has_timestamp = f.has("timestamp");
    const std::int64_t ms = has_timestamp ? f.integer("timestamp", 0, kMaxTimestampMs) : 0;
    if (has_timestamp) {
      if (ms < previous_ms) {
        f.fail("timestamp", "timestamps must not decrease (" + std::to_string(ms) + " after " +
                                std::to_string(previous_ms) + ")");
      }
      previous_ms = ms;
    }
    bool delay_given = false;
    const rt::Duration gap = gap_ms(f, delay_given);
    const std::string request_id = f.has("request_id") ? id_of(f.value("request_id"), f, "request_id") : "";
    if (f.has("wait_for")) {
      // Dependencies other than the previous turn of the same session form a graph that sessions cannot hold.
      const nlohmann::json& deps = f.array("wait_for");
      const bool previous_turn = turn_of != nullptr && !turn_of->last_request_id.empty() && deps.size() == 1 &&
                                 deps[0].is_string() && deps[0].get<std::string>() == turn_of->last_request_id;
      if (!deps.empty() && !previous_turn) {
        f.fail("wait_for", "only the previous request of the same session (its request_id) can be waited for");
      }
    }
    hashes = f.unsigned_list("hash_ids");
    for (auto& h : hashes) h = ns.hash(h);

    if (turn_of == nullptr) {
      if (!has_timestamp) f.fail("timestamp", "missing key: the first request of a session starts at its timestamp");
      if (gap.ns() != 0) f.fail("delay", "the first request of a session has no previous answer to wait after");
      Session s;
      s.labels = {"mooncake", session_id.empty() ? where : session_id, ""};
      s.block_size_tokens = block_tokens;
      s.recorded_start = rt::Time::zero() + rt::ms(ms);
      w.sessions.push_back(std::move(s));
      OpenSession open;
      open.index = w.sessions.size() - 1;
      r.block_hashes = open.chain.assign(hashes);
      open.last_ms = ms;
      open.last_has_timestamp = true;
      open.last_request_id = request_id;
      w.sessions.back().requests.push_back(std::move(r));
      // A line without a session_id is a session of its own: nothing can continue it.
      if (!session_id.empty()) sessions.emplace(session_id, std::move(open));
      continue;
    }
    // A later turn: after the previous answer plus its delay, or the gap between the two timestamps.
    if (delay_given || !has_timestamp) {
      r.think_time = gap;
    } else {
      if (!turn_of->last_has_timestamp) f.fail("delay", "missing key: neither a delay nor two timestamps to tell the gap");
      r.think_time = rt::ms(ms - turn_of->last_ms) + gap;
    }
    r.block_hashes = turn_of->chain.assign(hashes);
    turn_of->last_has_timestamp = has_timestamp;
    if (has_timestamp) turn_of->last_ms = ms;
    turn_of->last_request_id = request_id;
    w.sessions[turn_of->index].requests.push_back(std::move(r));
  }
  if (w.sessions.empty()) throw rt::InputError(file, "", "no requests in the trace");
  return w;
}

}  // namespace nvl::emu
