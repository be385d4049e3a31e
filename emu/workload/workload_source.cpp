#include "emu/workload/workload_source.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <vector>

#include "emu/rt/errors.h"
#include "emu/workload/azure_trace.h"
#include "emu/workload/bench_generator.h"
#include "emu/workload/claude_code_trace.h"
#include "emu/workload/coding_agent_generator.h"
#include "emu/workload/mooncake_trace.h"

namespace nvl::emu {
namespace {

constexpr std::string_view kCodexPrefix = "gen:codex";
constexpr std::uint64_t kDefaultSeed = 1;

std::uint64_t parse_count(const std::string& spec, const std::string& key, const std::string& value) {
  std::uint64_t v = 0;
  const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || p != value.data() + value.size()) {
    throw rt::InputError(spec, key, "expected a non-negative integer, got '" + value + "'");
  }
  return v;
}

// A factor on every prompt-side token count; bounded so that contexts stay far from overflow.
double parse_context_scale(const std::string& spec, const std::string& value) {
  constexpr double kMaxScale = 64;
  double v = 0;
  const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || p != value.data() + value.size() || !(v > 0) || v > kMaxScale) {
    throw rt::InputError(spec, "context_scale", "expected a number above 0 and at most 64, got '" + value + "'");
  }
  return v;
}

WorkloadSource generate(const std::string& spec, const LoadOptions& options) {
  std::string params = spec.substr(kCodexPrefix.size());
  if (!params.empty() && params[0] != ':') {
    throw rt::InputError(spec, "", "expected gen:codex[:trials=N,seed=S,profile=PATH,context_scale=F]");
  }
  std::optional<std::int64_t> trials;
  std::uint64_t seed = kDefaultSeed;
  std::string profile_path;
  double context_scale = 1;
  std::string context_scale_text;
  std::size_t pos = params.empty() ? std::string::npos : 1;
  while (pos != std::string::npos && pos < params.size()) {
    const std::size_t comma = params.find(',', pos);
    const std::string item = params.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? comma : comma + 1;
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos) throw rt::InputError(spec, item, "expected key=value");
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    if (key == "trials") {
      trials = static_cast<std::int64_t>(parse_count(spec, key, value));
      if (*trials == 0) throw rt::InputError(spec, key, "expected at least 1 trial");
    } else if (key == "seed") {
      seed = parse_count(spec, key, value);
    } else if (key == "profile") {
      profile_path = value;
    } else if (key == "context_scale") {
      context_scale = parse_context_scale(spec, value);
      context_scale_text = value;
    } else {
      throw rt::InputError(spec, key, "unknown parameter (expected trials, seed, profile or context_scale)");
    }
  }
  CodingAgentProfile profile =
      profile_path.empty() ? CodingAgentProfile::builtin_codex() : CodingAgentProfile::load(profile_path);
  if (context_scale != 1) profile = profile.with_contexts_scaled(context_scale);
  std::int64_t n = trials.value_or(profile.default_trials);
  if (options.max_sessions < static_cast<std::size_t>(n)) n = static_cast<std::int64_t>(options.max_sessions);
  WorkloadSource src;
  src.workload = CodingAgentGenerator(profile).generate(n, seed);
  if (context_scale != 1) src.workload.source += ",context_scale=" + context_scale_text;
  src.profile = std::move(profile);
  return src;
}

bool holds_json(const std::filesystem::path& dir) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".json") return true;
  }
  return false;
}

// A folder as the trace collections ship (../shared/traces/<name>/: the trace beside its README and
// license): a folder of Claude Code .json traces is itself the trace; otherwise the one .jsonl or .csv
// file in it, or the one sub-folder of .json traces.
std::filesystem::path trace_in_folder(const std::filesystem::path& dir) {
  if (holds_json(dir)) return dir;
  std::vector<std::filesystem::path> found;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string ext = e.path().extension().string();
    if ((e.is_regular_file() && (ext == ".jsonl" || ext == ".csv")) || (e.is_directory() && holds_json(e.path()))) {
      found.push_back(e.path());
    }
  }
  if (ec) throw rt::InputError(dir.string(), "", "cannot list the folder: " + ec.message());
  if (found.size() == 1) return found.front();
  std::string names;
  for (const auto& f : found) names += (names.empty() ? "" : ", ") + f.filename().string();
  throw rt::InputError(dir.string(), "",
                       found.empty() ? "no trace in this folder (expected Claude Code .json traces, a .jsonl or .csv "
                                       "trace, or a folder of .json traces)"
                                     : "more than one trace in this folder (" + names + "): name one");
}

}  // namespace

WorkloadSource open_workload_source(const std::string& spec, const LoadOptions& options) {
  if (spec.rfind(kCodexPrefix, 0) == 0) return generate(spec, options);
  if (spec.starts_with(kBenchPrefix)) {
    const BenchSpec bench = parse_bench_spec(spec);
    if (options.max_sessions == LoadOptions{}.max_sessions) {
      throw rt::InputError(spec, "", "a benchmark workload needs a request count (workload.requests, or --limit)");
    }
    WorkloadSource src;
    src.workload = BenchGenerator(bench).generate(options.max_sessions);
    return src;
  }
  if (spec.rfind("gen:", 0) == 0) throw rt::InputError(spec, "", "unknown generator (expected gen:codex)");
  std::filesystem::path path(spec);
  if (!std::filesystem::exists(path)) throw rt::InputError(spec, "", "no such file or folder");
  if (std::filesystem::is_directory(path)) path = trace_in_folder(path);
  WorkloadSource src;
  if (std::filesystem::is_directory(path)) {
    src.workload = load_claude_code_trace(path, options);
    return src;
  }
  const std::string ext = path.extension().string();
  if (ext == ".jsonl") {
    src.workload = load_mooncake_trace(path, options);
  } else if (ext == ".csv") {
    src.workload = load_azure_trace(path, options);
  } else if (ext == ".json") {
    src.workload = load_claude_code_trace(path, options);
  } else {
    // Tell by the first line.
    std::ifstream in(path);
    std::string first;
    std::getline(in, first);
    if (first.rfind("TIMESTAMP,", 0) == 0) {
      src.workload = load_azure_trace(path, options);
    } else if (first.find("\"hash_ids\"") != std::string::npos && first.find("\"timestamp\"") != std::string::npos) {
      src.workload = load_mooncake_trace(path, options);
    } else if (first.find('{') != std::string::npos) {
      src.workload = load_claude_code_trace(path, options);
    } else {
      throw rt::InputError(spec, "line 1", "cannot tell the trace format (expected Mooncake JSONL, Azure CSV or Claude Code JSON)");
    }
  }
  return src;
}

}  // namespace nvl::emu
