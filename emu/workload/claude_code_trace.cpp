#include "emu/workload/claude_code_trace.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "emu/rt/errors.h"
#include "emu/workload/block_namespace.h"
#include "emu/workload/hash_chain_builder.h"
#include "emu/rt/json_reader.h"
#include "emu/workload/trace_file.h"

namespace nvl::emu {
namespace {

// About 31 years: far beyond a conversation's span, and its nanoseconds fit in 64 bits.
constexpr double kMaxSeconds = 1e9;

// A time in seconds (t, think_time, api_time): non-negative and below kMaxSeconds.
double seconds(rt::JsonReader& e, std::string_view key) {
  const double s = e.number(key);
  if (s > kMaxSeconds) e.fail(key, "expected at most " + std::to_string(static_cast<std::int64_t>(kMaxSeconds)) + " s");
  return s;
}

class FileLoader {
 public:
  FileLoader(const std::filesystem::path& path, Workload& w) : path_(path), file_(path.string()), w_(w) {}

  void load() {
    const nlohmann::json root = nlohmann::json::parse(read_trace_file(path_), nullptr, false);
    if (root.is_discarded()) throw rt::InputError(file_, "", "malformed JSON (expected one conversation object)");
    rt::JsonReader f(root, file_);
    const std::string id = f.string("id");
    block_tokens_ = static_cast<std::int32_t>(f.integer("block_size", 1, 1 << 20));
    const std::string scope = f.string("hash_id_scope");
    std::string file_ns;
    if (scope == "local") {
      file_ns = "claude-code/" + path_.filename().string();
    } else if (scope == "global") {
      file_ns = "claude-code/global";
    } else {
      f.fail("hash_id_scope", "expected \"local\" or \"global\", got \"" + scope + "\"");
    }
    add_session(root, "", id, "", file_ns, std::nullopt);
  }

 private:
  // Adds the session whose entries are obj["requests"] (obj is at key path `path`), then its sub-agents.
  void add_session(const nlohmann::json& obj, const std::string& path, const std::string& id,
                   const std::string& subagent, const std::string& ns_name, std::optional<SpawnPoint> spawn) {
    rt::JsonReader f(obj, file_, path);
    const nlohmann::json& entries = f.array("requests");
    const std::string where = path.empty() ? "requests" : path + ".requests";
    const std::size_t index = w_.sessions.size();
    w_.sessions.emplace_back();
    {
      Session& s = w_.sessions.back();
      s.labels = {"claude-code", id, subagent};
      s.block_size_tokens = block_tokens_;
      s.spawn = spawn;
    }
    struct PendingSubagent {
      std::size_t entry;
      SpawnPoint spawn;
    };
    std::vector<PendingSubagent> subagents;
    HashChainBuilder chain;
    const BlockNamespace ns(ns_name);
    double previous_t = 0;
    double previous_end_t = 0;  // t + api_time of the previous request: when its answer came back
    std::vector<std::uint64_t> hashes;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const std::string at = where + "[" + std::to_string(i) + "]";
      const nlohmann::json& entry = entries[i];
      rt::JsonReader e(entry, file_, at);
      const double t = seconds(e, "t");
      if (t < previous_t) e.fail("t", "times must not decrease within a conversation");
      const std::string type = e.string("type");
      Session& s = w_.sessions[index];
      if (type == "subagent") {
        SpawnPoint p;
        p.parent = index;
        p.after_requests = s.requests.size();
        p.delay = rt::from_seconds(std::max(0.0, t - (s.requests.empty() ? 0.0 : previous_end_t)));
        subagents.push_back({i, p});
        previous_t = t;
        continue;
      }
      if (type != "n" && type != "s") e.fail("type", "expected \"n\", \"s\" or \"subagent\", got \"" + type + "\"");
      Request r;
      r.prompt_tokens = e.integer("in", kMinPromptTokens, kMaxRequestTokens);
      r.output_tokens = e.integer("out", 0, kMaxRequestTokens);
      hashes = e.unsigned_list("hash_ids");
      for (auto& h : hashes) h = ns.hash(h);
      r.block_hashes = chain.assign(hashes);
      r.offset = rt::from_seconds(t);
      const auto think = entry.find("think_time");
      if (think != entry.end()) {
        r.think_time = rt::from_seconds(seconds(e, "think_time"));
      } else if (!s.requests.empty()) {
        r.think_time = rt::from_seconds(t - previous_t);  // the format's own fallback: the recorded gap
      }
      const auto api = entry.find("api_time");
      previous_end_t = t + (api != entry.end() ? seconds(e, "api_time") : 0.0);
      previous_t = t;
      s.requests.push_back(std::move(r));
    }
    for (const auto& p : subagents) {
      const nlohmann::json& entry = entries[p.entry];
      const std::string at = where + "[" + std::to_string(p.entry) + "]";
      rt::JsonReader e(entry, file_, at);
      const std::string agent = e.string("agent_id");
      // Ids that restart at 1 would collide with the parent's: give such a sub-agent its own namespace.
      bool restarts = false;
      for (const auto& req : e.array("requests")) {
        const auto h = req.find("hash_ids");
        if (h != req.end() && h->is_array() && !h->empty()) {
          restarts = (*h)[0] == 1;
          break;
        }
      }
      add_session(entry, at, id, agent, restarts ? ns_name + "/" + agent : ns_name, p.spawn);
    }
  }

  std::filesystem::path path_;
  std::string file_;
  Workload& w_;
  std::int32_t block_tokens_ = 0;
};

}  // namespace

Workload load_claude_code_trace(const std::filesystem::path& path, const LoadOptions& options) {
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(path)) {
    for (const auto& e : std::filesystem::directory_iterator(path)) {
      if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) throw rt::InputError(path.string(), "", "no .json trace files in this folder");
  } else {
    files.push_back(path);
  }
  Workload w;
  w.source = path.string();
  std::size_t conversations = 0;
  for (const auto& f : files) {
    if (conversations++ >= options.max_sessions) break;
    FileLoader(f, w).load();
  }
  return w;
}

}  // namespace nvl::emu
