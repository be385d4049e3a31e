#include "emu/workload/mooncake_trace.h"

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
}  // namespace

Workload load_mooncake_trace(const std::filesystem::path& path, const LoadOptions& options) {
  const std::string file = path.string();
  const std::string text = read_trace_file(path);
  const BlockNamespace ns("mooncake/" + path.filename().string());
  Workload w;
  w.source = file;
  std::int64_t previous_ms = 0;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  std::vector<std::uint64_t> hashes;
  while (pos < text.size() && w.sessions.size() < options.max_sessions) {
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
    const std::int64_t ms = f.integer("timestamp", 0, kMaxTimestampMs);
    if (ms < previous_ms) {
      f.fail("timestamp", "timestamps must not decrease (" + std::to_string(ms) + " after " +
                              std::to_string(previous_ms) + ")");
    }
    previous_ms = ms;
    Request r;
    r.prompt_tokens = f.integer("input_length");
    r.output_tokens = f.integer("output_length");
    hashes = f.unsigned_list("hash_ids");
    for (auto& h : hashes) h = ns.hash(h);
    // Lines are separate sessions: no chain to share.
    HashChainBuilder chain;
    r.block_hashes = chain.assign(hashes);
    Session s;
    s.labels = {"mooncake", "line " + std::to_string(line_no), ""};
    s.block_size_tokens = kMooncakeBlockTokens;
    s.recorded_start = rt::Time::zero() + rt::ms(ms);
    s.requests.push_back(std::move(r));
    w.sessions.push_back(std::move(s));
  }
  if (w.sessions.empty()) throw rt::InputError(file, "", "no requests in the trace");
  return w;
}

}  // namespace nvl::emu
