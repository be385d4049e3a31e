#include "emu/scenario/timeline_sampler.h"

#include <algorithm>
#include <limits>

#include "emu/scenario/gpu_roles.h"

namespace nvl::emu {

namespace {

const char* link_class_name(fabric::LinkKind k) {
  switch (k) {
    case fabric::LinkKind::nvlink: return "nvlink";
    case fabric::LinkKind::c2c: return "c2c";
    case fabric::LinkKind::pcie: return "pcie";
    case fabric::LinkKind::nic: return "nic";
    case fabric::LinkKind::uplink: return "uplink";
    case fabric::LinkKind::host_memory: return "host_memory";
  }
  return "other";
}

void add(const engine::KvHitCounts& c, KvHits& h) {
  h.lookup_tokens += static_cast<std::uint64_t>(c.admitted_tokens);
  // Prefixes fetched from a peer are imported into the GPU pool before the admit counts them as GPU
  // hits: they are counted once, as remote.
  h.gpu_tokens += static_cast<std::uint64_t>(std::max<std::int64_t>(0, c.gpu_hit_tokens - c.imported_tokens));
  h.grace_tokens += static_cast<std::uint64_t>(c.grace_hit_tokens);
  h.remote_tokens += static_cast<std::uint64_t>(c.imported_tokens);
  h.grace_load_bytes += c.grace_loaded_bytes;
  h.grace_offload_bytes += c.grace_stored_bytes;
}

// One pool's ranks at a sample.
struct PoolNow {
  double waiting = 0, running = 0, kv_used = 0, kv_capacity = 0;
  double ranks = 0, most_running = 0;  // DP ranks only
};

void add_rank(PoolNow& pool, const engine::RankScheduler& sched, const engine::KvCacheManager& kv) {
  pool.waiting += static_cast<double>(sched.waiting());
  pool.running += static_cast<double>(sched.running());
  pool.most_running = std::max(pool.most_running, static_cast<double>(sched.running()));
  pool.kv_used += static_cast<double>(kv.gpu().used_blocks());
  pool.kv_capacity += static_cast<double>(kv.gpu().capacity());
}

}  // namespace

TimelineSampler::TimelineSampler(rt::Runtime& rt, Deployment& deployment, const ScenarioDeployment& layout,
                                 double interval_s)
    : rt_(rt), deployment_(deployment), last_(rt.now()) {
  timeline_.interval_s = interval_s;
  fakegpu::GpuFleet& fleet = deployment_.cluster().fleet();
  timeline_.gpu_busy.resize(static_cast<std::size_t>(fleet.size()));
  busy_.resize(static_cast<std::size_t>(fleet.size()));
  pools_ = pool_membership(layout);
  const std::vector<GpuRole> roles = gpu_roles(layout, fleet.size());
  for (int i = 0; i < fleet.size(); ++i) timeline_.gpu_names.push_back(gpu_name(i, roles[static_cast<std::size_t>(i)]));
  for (int i = 0; i < fleet.size(); ++i) {
    busy_[static_cast<std::size_t>(i)] = fleet.device(i).compute().busy_time();
  }
  const fabric::Fabric& fabric = deployment_.cluster().fabric();
  const auto& channels = fabric.topology().channels();
  carried_.resize(channels.size());
  std::map<std::string, std::size_t> index;
  for (std::size_t c = 0; c < channels.size(); ++c) {
    carried_[c] = fabric.carried_bytes(static_cast<int>(c));
    if (channels[c].links.empty()) continue;
    const std::string name =
        link_class_name(fabric.topology().links()[static_cast<std::size_t>(channels[c].links.front())].kind);
    auto [it, fresh] = index.emplace(name, classes_.size());
    if (fresh) classes_.push_back(LinkClass{name, {}, 0});
    classes_[it->second].channels.push_back(static_cast<int>(c));
    classes_[it->second].capacity_bytes_per_s += fabric.nominal_capacity(static_cast<int>(c));
  }
  kv_last_ = kv_hits();
}

void TimelineSampler::on_submit(const engine::RequestState& r) { prompt_tokens_[r.id] = r.prompt_tokens; }

void TimelineSampler::on_tokens(engine::RequestId id, std::int64_t count, bool first) {
  output_tokens_ += static_cast<double>(count);
  if (!first) return;
  first_token_sample_[id] = timeline_.samples();  // the interval open now
  const auto it = prompt_tokens_.find(id);
  if (it == prompt_tokens_.end()) return;
  input_tokens_ += static_cast<double>(it->second);
  prompt_tokens_.erase(it);
}

void TimelineSampler::on_done(const engine::RequestTiming& t) {
  prompt_tokens_.erase(t.id);  // failed before its first token
  const auto it = first_token_sample_.find(t.id);
  if (it == first_token_sample_.end()) return;
  if (split_.size() <= it->second) split_.resize(it->second + 1);
  SplitSums& s = split_[it->second];
  s.queue += t.queue().seconds();
  s.prefill += t.prefill().seconds();
  s.kv_transfer += t.kv_transfer().seconds();
  s.first_decode += t.first_decode_step().seconds();
  ++s.requests;
  first_token_sample_.erase(it);
}

Timeline TimelineSampler::take() {
  Timeline& t = timeline_;
  const std::size_t n = t.samples();
  const double gap = std::numeric_limits<double>::quiet_NaN();
  for (const char* part : {"queue", "prefill", "kv_transfer", "first_decode"}) t.ttft_split_s[part].assign(n, gap);
  for (std::size_t i = 0; i < n && i < split_.size(); ++i) {
    const SplitSums& s = split_[i];
    if (s.requests == 0) continue;
    const auto mean = [&s](double sum) { return sum / static_cast<double>(s.requests); };
    t.ttft_split_s["queue"][i] = mean(s.queue);
    t.ttft_split_s["prefill"][i] = mean(s.prefill);
    t.ttft_split_s["kv_transfer"][i] = mean(s.kv_transfer);
    t.ttft_split_s["first_decode"][i] = mean(s.first_decode);
  }
  return std::move(timeline_);
}

double TimelineSampler::dp_imbalance() const {
  return imbalance_samples_ > 0 ? imbalance_sum_ / static_cast<double>(imbalance_samples_) : 0;
}

KvHits TimelineSampler::kv_hits() const {
  KvHits h;
  engine::PdSystem& system = deployment_.system();
  const auto evicted_tokens = [](const engine::KvCacheManager& kv) {
    return static_cast<std::uint64_t>(kv.gpu().evicted_for_space() * kv.gpu().block_tokens());
  };
  for (std::int32_t r = 0; r < system.ranks(); ++r) {
    add(system.kv(r).hit_counts(), h);
    h.gpu_evicted_tokens += evicted_tokens(system.kv(r));
  }
  for (std::size_t i = 0; i < system.prefill_instances(); ++i) {
    for (std::int32_t r = 0; r < system.prefill(i).ranks(); ++r) {
      add(system.prefill(i).kv(r).hit_counts(), h);
      h.prefill_evicted_tokens += evicted_tokens(system.prefill(i).kv(r));
    }
  }
  return h;
}

void TimelineSampler::sample() {
  const rt::Time now = rt_.now();
  const double dt = (now - last_).seconds();
  if (dt <= 0) return;
  last_ = now;
  Timeline& t = timeline_;
  t.t_s.push_back(now.since_start().seconds());
  t.input_tokens_per_s.push_back(input_tokens_ / dt);
  t.output_tokens_per_s.push_back(output_tokens_ / dt);
  input_tokens_ = output_tokens_ = 0;

  engine::PdSystem& system = deployment_.system();
  std::map<std::string, PoolNow> pools;
  for (std::int32_t r = 0; r < system.ranks(); ++r) {
    PoolNow& pool = pools[pools_.rank_pool.at(static_cast<std::size_t>(r))];
    add_rank(pool, system.scheduler(r), system.kv(r));
    ++pool.ranks;
  }
  for (const auto& [name, pool] : pools) {
    if (pool.ranks < 2 || pool.running <= 0) continue;
    imbalance_sum_ += pool.most_running / (pool.running / pool.ranks);
    ++imbalance_samples_;
  }
  for (std::size_t i = 0; i < system.prefill_instances(); ++i) {
    PoolNow& pool = pools[pools_.prefill_pool.at(i)];
    for (std::int32_t r = 0; r < system.prefill(i).ranks(); ++r) {
      add_rank(pool, system.prefill(i).scheduler(r), system.prefill(i).kv(r));
    }
  }
  double waiting = static_cast<double>(system.pending()), running = 0;
  for (const auto& [name, pool] : pools) {
    Timeline::PoolSeries& series = t.pools[name];
    series.waiting.push_back(pool.waiting);
    series.running.push_back(pool.running);
    series.kv_used.push_back(pool.kv_capacity > 0 ? pool.kv_used / pool.kv_capacity : 0);
    waiting += pool.waiting;
    running += pool.running;
  }
  t.waiting.push_back(waiting);
  t.running.push_back(running);

  fakegpu::GpuFleet& fleet = deployment_.cluster().fleet();
  for (int i = 0; i < fleet.size(); ++i) {
    const auto u = static_cast<std::size_t>(i);
    const rt::Duration busy = fleet.device(i).compute().busy_time();
    t.gpu_busy[u].push_back(std::min(1.0, (busy - busy_[u]).seconds() / dt));
    busy_[u] = busy;
  }

  const fabric::Fabric& fabric = deployment_.cluster().fabric();
  for (const LinkClass& cls : classes_) {
    double bytes = 0, peak = 0;
    for (int c : cls.channels) {
      const auto u = static_cast<std::size_t>(c);
      const double now_bytes = fabric.carried_bytes(c);
      const double moved = now_bytes - carried_[u];
      carried_[u] = now_bytes;
      bytes += moved;
      const double cap = fabric.nominal_capacity(c);
      if (cap > 0) peak = std::max(peak, moved / (cap * dt));
    }
    class_bytes_[cls.name] += bytes;
    t.link_mean[cls.name].push_back(cls.capacity_bytes_per_s > 0 ? bytes / (cls.capacity_bytes_per_s * dt) : 0);
    t.link_peak[cls.name].push_back(peak);
  }

  const KvHits kv = kv_hits();
  t.kv_lookup_tokens.push_back(static_cast<double>(kv.lookup_tokens - kv_last_.lookup_tokens));
  t.kv_hit_tokens["gpu"].push_back(static_cast<double>(kv.gpu_tokens) - static_cast<double>(kv_last_.gpu_tokens));
  t.kv_hit_tokens["grace"].push_back(static_cast<double>(kv.grace_tokens - kv_last_.grace_tokens));
  t.kv_hit_tokens["remote"].push_back(static_cast<double>(kv.remote_tokens - kv_last_.remote_tokens));
  kv_last_ = kv;
}

std::map<std::string, LinkUse> TimelineSampler::link_use() const {
  std::map<std::string, LinkUse> out;
  const double span_s = timeline_.t_s.empty() ? 0 : timeline_.t_s.back();
  for (const LinkClass& cls : classes_) {
    LinkUse u;
    const auto bytes = class_bytes_.find(cls.name);
    if (bytes != class_bytes_.end()) u.bytes = bytes->second;
    if (bytes != class_bytes_.end() && span_s > 0 && cls.capacity_bytes_per_s > 0) {
      u.mean = bytes->second / (cls.capacity_bytes_per_s * span_s);
    }
    const auto mean = timeline_.link_mean.find(cls.name);
    const auto peak = timeline_.link_peak.find(cls.name);
    if (mean != timeline_.link_mean.end() && !mean->second.empty()) {
      u.peak = *std::max_element(mean->second.begin(), mean->second.end());
    }
    if (peak != timeline_.link_peak.end() && !peak->second.empty()) {
      u.peak_channel = *std::max_element(peak->second.begin(), peak->second.end());
    }
    out[cls.name] = u;
  }
  return out;
}

}  // namespace nvl::emu
