#include "emu/workload/trace_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <span>
#include <tuple>

#include <nlohmann/json.hpp>

#include "emu/rt/hash.h"

namespace nvl::emu {
namespace {

// Linear interpolation between closest ranks (the usual "type 7" definition).
double percentile(const std::vector<double>& sorted, double q) {
  const double h = static_cast<double>(sorted.size() - 1) * q;
  const auto i = static_cast<std::size_t>(std::floor(h));
  if (i + 1 >= sorted.size()) return sorted.back();
  return sorted[i] + (h - static_cast<double>(i)) * (sorted[i + 1] - sorted[i]);
}

void add_summary(std::map<std::string, double>& f, const std::string& name, std::vector<double> xs) {
  if (xs.empty()) return;
  std::sort(xs.begin(), xs.end());
  f[name + ".mean"] = std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(xs.size());
  f[name + ".p50"] = percentile(xs, 0.50);
  f[name + ".p90"] = percentile(xs, 0.90);
  f[name + ".p99"] = percentile(xs, 0.99);
}

double mean(const std::vector<double>& xs) {
  return xs.empty() ? 0.0 : std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(xs.size());
}

// An open-addressing set of 64-bit block hashes: millions of inserts per replay, where a node-based set
// spends most of its time in malloc.
class BlockSet {
 public:
  BlockSet() : slots_(kInitialSlots, 0) {}
  bool contains(std::uint64_t h) const {
    if (h == 0) return has_zero_;
    for (std::size_t i = index(h);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i] == h) return true;
      if (slots_[i] == 0) return false;
    }
  }
  void insert(std::uint64_t h) {
    if (h == 0) {
      has_zero_ = true;
      return;
    }
    if (2 * (size_ + 1) > slots_.size()) grow();  // keep the load factor at most 1/2
    place(h);
  }

 private:
  static constexpr std::size_t kInitialSlots = 1 << 16;
  std::size_t index(std::uint64_t h) const { return static_cast<std::size_t>(rt::splitmix64(h)) & (slots_.size() - 1); }
  void place(std::uint64_t h) {
    for (std::size_t i = index(h);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i] == h) return;
      if (slots_[i] == 0) {
        slots_[i] = h;
        ++size_;
        return;
      }
    }
  }
  void grow() {
    std::vector<std::uint64_t> old(slots_.size() * 2, 0);
    old.swap(slots_);
    size_ = 0;
    for (const auto h : old) {
      if (h != 0) place(h);
    }
  }
  std::vector<std::uint64_t> slots_;
  std::size_t size_ = 0;
  bool has_zero_ = false;
};

// The requests' uncached tokens under one view of the unbounded cache.
struct CacheView {
  BlockSet blocks;
  double cached_tokens = 0;
  double input_tokens = 0;
  double hit_blocks = 0;
  double total_blocks = 0;
  std::vector<double> computed;
  std::vector<double> context;  // prompt tokens, aligned with computed

  // Matches the longest cached prefix from `known` on (blocks below it are known to be cached).
  void record(std::span<const std::uint64_t> ids, std::size_t known, std::int64_t prompt, std::int64_t block) {
    std::size_t m = known;
    while (m < ids.size() && blocks.contains(ids[m])) ++m;
    const auto cached = std::min<std::int64_t>(static_cast<std::int64_t>(m) * block, prompt);
    cached_tokens += static_cast<double>(cached);
    input_tokens += static_cast<double>(prompt);
    hit_blocks += static_cast<double>(m);
    total_blocks += static_cast<double>(ids.size());
    computed.push_back(static_cast<double>(prompt - cached));
    context.push_back(static_cast<double>(prompt));
  }

  void add_figures(std::map<std::string, double>& f, const std::string& name, const TraceStatsOptions& o) const {
    f[name + ".cached.mean"] = cached_tokens / static_cast<double>(computed.size());
    add_summary(f, name + ".computed", computed);
    f[name + ".hit_rate"] = input_tokens > 0 ? cached_tokens / input_tokens : 0;
    f[name + ".block_hit_rate"] = total_blocks > 0 ? hit_blocks / total_blocks : 0;
    std::vector<double> need_context;
    std::vector<double> need;
    for (std::size_t i = 0; i < computed.size(); ++i) {
      if (computed[i] > 0) {
        need.push_back(computed[i]);
        need_context.push_back(context[i]);
      }
    }
    f[name + ".prefill_requests"] = static_cast<double>(need.size());
    for (const auto t : o.prefill_thresholds_tokens) {
      const auto under = std::count_if(need.begin(), need.end(), [t](double c) { return c < static_cast<double>(t); });
      f[name + ".prefill_share_under_" + std::to_string(t)] =
          need.empty() ? 0 : static_cast<double>(under) / static_cast<double>(need.size());
    }
    if (!need.empty()) f[name + ".prefill_context.mean"] = mean(need_context);
    std::vector<double> sorted = computed;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    const double total = std::accumulate(sorted.begin(), sorted.end(), 0.0);
    for (const auto& [label, share] : {std::pair{"top5", 0.05}, std::pair{"top20", 0.20}}) {
      const auto k = static_cast<std::ptrdiff_t>(std::llround(share * static_cast<double>(sorted.size())));
      f[name + "." + label + "_computed_share"] =
          total > 0 ? std::accumulate(sorted.begin(), sorted.begin() + k, 0.0) / total : 0;
    }
  }
};

std::size_t common_prefix(std::span<const std::uint64_t> a, std::span<const std::uint64_t> b) {
  const std::size_t n = std::min(a.size(), b.size());
  if (a.data() == b.data()) return n;  // views of one shared chain
  return static_cast<std::size_t>(std::mismatch(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n), b.begin()).first -
                                  a.begin());
}

// When each session starts on the recorded (or nominal) timeline: sub-agents from their parent.
std::vector<rt::Time> session_bases(const Workload& w) {
  std::vector<rt::Time> base(w.sessions.size());
  std::vector<bool> done(w.sessions.size(), false);
  std::function<rt::Time(std::size_t, std::size_t)> resolve = [&](std::size_t i, std::size_t depth) {
    if (done[i]) return base[i];
    const Session& s = w.sessions[i];
    rt::Time t = s.recorded_start.value_or(rt::Time::zero());
    if (s.spawn && depth < w.sessions.size()) {
      const Session& parent = w.sessions[s.spawn->parent];
      t = resolve(s.spawn->parent, depth + 1) + s.spawn->delay;
      if (s.spawn->after_requests > 0) t += parent.requests[s.spawn->after_requests - 1].offset;
    }
    done[i] = true;
    return base[i] = t;
  };
  for (std::size_t i = 0; i < w.sessions.size(); ++i) resolve(i, 0);
  return base;
}

}  // namespace

TraceStats TraceStats::compute(const Workload& w, const TraceStatsOptions& options) {
  struct Item {
    rt::Time at;
    std::uint32_t session;
    std::uint32_t request;
  };
  const auto base = session_bases(w);
  std::vector<Item> items;
  items.reserve(w.request_count());
  for (std::size_t s = 0; s < w.sessions.size(); ++s) {
    const auto& reqs = w.sessions[s].requests;
    for (std::size_t r = 0; r < reqs.size(); ++r) {
      items.push_back({base[s] + reqs[r].offset, static_cast<std::uint32_t>(s), static_cast<std::uint32_t>(r)});
    }
  }
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return std::tie(a.at, a.session, a.request) < std::tie(b.at, b.session, b.request);
  });

  CacheView prefix;
  CacheView decoded;
  std::vector<double> input;
  std::vector<double> output;
  std::vector<bool> first_cached(w.sessions.size(), false);
  for (const Item& it : items) {
    const Session& s = w.sessions[it.session];
    const Request& r = s.requests[it.request];
    const auto ids = r.block_hashes.ids();
    const std::int64_t block = s.block_size_tokens;
    std::size_t known = 0;
    bool continues = false;
    if (it.request > 0) {
      const Request& prev = s.requests[it.request - 1];
      const auto prev_ids = prev.block_hashes.ids();
      known = common_prefix(ids, prev_ids);
      continues = known == prev_ids.size();
      if (continues) {
        // The previous answer's blocks, as the engine that decoded it holds them.
        const auto answer_end = std::min<std::size_t>(
            ids.size(), static_cast<std::size_t>((prev.prompt_tokens + prev.output_tokens) / block));
        for (std::size_t b = known; b < answer_end; ++b) decoded.blocks.insert(ids[b]);
      }
    }
    prefix.record(ids, known, r.prompt_tokens, block);
    decoded.record(ids, known, r.prompt_tokens, block);
    if (it.request == 0) first_cached[it.session] = prefix.computed.back() < static_cast<double>(r.prompt_tokens);
    for (std::size_t b = known; b < ids.size(); ++b) {
      prefix.blocks.insert(ids[b]);
      decoded.blocks.insert(ids[b]);
    }
    input.push_back(static_cast<double>(r.prompt_tokens));
    output.push_back(static_cast<double>(r.output_tokens));
  }

  TraceStats st;
  st.source_ = w.source;
  auto& f = st.figures_;
  f["requests"] = static_cast<double>(items.size());
  f["sessions"] = static_cast<double>(w.sessions.size());
  f["subagent_sessions"] =
      static_cast<double>(std::count_if(w.sessions.begin(), w.sessions.end(), [](const Session& s) { return s.spawn.has_value(); }));
  if (items.empty()) return st;
  add_summary(f, "input", input);
  add_summary(f, "output", output);
  prefix.add_figures(f, "prefix", options);
  decoded.add_figures(f, "decoded", options);

  // Conversation figures, when sessions have more than one request.
  std::vector<double> calls, first, last, growth, delay_s, duration_s;
  std::vector<std::vector<double>> phase_growth(options.phase_first_turns.size());
  double first_with_cache = 0;
  for (std::size_t i = 0; i < w.sessions.size(); ++i) {
    const auto& reqs = w.sessions[i].requests;
    if (reqs.empty()) continue;
    calls.push_back(static_cast<double>(reqs.size()));
    first.push_back(static_cast<double>(reqs.front().prompt_tokens));
    last.push_back(static_cast<double>(reqs.back().prompt_tokens));
    first_with_cache += first_cached[i] ? 1 : 0;
    duration_s.push_back((reqs.back().offset - reqs.front().offset).seconds());
    for (std::size_t n = 1; n < reqs.size(); ++n) {
      const double g = static_cast<double>(reqs[n].prompt_tokens - reqs[n - 1].prompt_tokens);
      growth.push_back(g);
      delay_s.push_back((reqs[n].offset - reqs[n - 1].offset).seconds());
      const auto turn = static_cast<std::int64_t>(n + 1);
      for (std::size_t p = options.phase_first_turns.size(); p-- > 0;) {
        if (turn >= options.phase_first_turns[p]) {
          phase_growth[p].push_back(g);
          break;
        }
      }
    }
  }
  if (growth.empty()) return st;
  add_summary(f, "calls_per_session", calls);
  add_summary(f, "first_call.input", first);
  f["first_call.cached_share"] = first_with_cache / static_cast<double>(first.size());
  add_summary(f, "last_call.input", last);
  add_summary(f, "growth", growth);
  for (std::size_t p = 0; p < phase_growth.size(); ++p) {
    if (phase_growth[p].empty()) continue;
    const std::string from = std::to_string(options.phase_first_turns[p]);
    const std::string to = p + 1 < phase_growth.size() ? std::to_string(options.phase_first_turns[p + 1] - 1) : "plus";
    f["growth.turns_" + from + "_" + to + ".mean"] = mean(phase_growth[p]);
  }
  add_summary(f, "inter_call_delay_s", delay_s);
  f["session_duration_s.mean"] = mean(duration_s);
  return st;
}

double TraceStats::figure(const std::string& name) const {
  const auto it = figures_.find(name);
  if (it == figures_.end()) throw std::out_of_range("no figure '" + name + "' for " + source_);
  return it->second;
}

void TraceStats::print(std::ostream& os) const {
  os << "trace stats: " << source_ << "\n";
  for (const auto& [name, value] : figures_) {
    char buf[160];
    if (std::fabs(value) < 10 && value != std::floor(value)) {
      std::snprintf(buf, sizeof buf, "  %-44s %14.4f\n", name.c_str(), value);
    } else {
      std::snprintf(buf, sizeof buf, "  %-44s %14.0f\n", name.c_str(), value);
    }
    os << buf;
  }
}

nlohmann::json TraceStats::to_json() const {
  nlohmann::json j;
  j["source"] = source_;
  j["figures"] = figures_;
  return j;
}

}  // namespace nvl::emu
