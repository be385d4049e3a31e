#include "fabric/flow_model.h"

#include <cmath>
#include <limits>

namespace nvl::fabric {

namespace {
// After the events of an instant: every start and end at that instant joins one recompute.
constexpr rt::Priority kRecomputePriority = 1 << 20;
}  // namespace

FlowModel::FlowModel(rt::Runtime& rt, std::vector<double> capacity, rt::Duration usage_interval)
    : rt_(rt), channels_(capacity.size()), usage_(capacity.size(), usage_interval) {
  for (std::size_t c = 0; c < capacity.size(); ++c) {
    channels_[c].capacity = capacity[c];
    if (capacity[c] <= 0) ++dead_channels_;
  }
}

const UsageRecorder& FlowModel::usage() const { return usage_; }

double FlowModel::carried_bytes(int channel) const {
  const ChannelState& ch = channels_[static_cast<std::size_t>(channel)];
  return ch.carried_bytes + ch.load * static_cast<double>(rt_.now().ns() - ch.since_ns) * 1e-9;
}

void FlowModel::start(std::vector<int> path, double bytes, rt::Duration latency, Done done, double max_rate) {
  bool dead = false;
  for (int c : path) dead = dead || channels_[static_cast<std::size_t>(c)].capacity <= 0;
  if (path.empty() || bytes <= 0 || dead) {
    int failed = kNoFailure;
    for (int c : path) {
      if (channels_[static_cast<std::size_t>(c)].capacity <= 0) failed = c;
    }
    rt_.call_after(failed == kNoFailure ? latency : rt::Duration(), [done = std::move(done), failed] { done(failed); });
    return;
  }
  int id;
  if (free_.empty()) {
    id = static_cast<int>(flows_.size());
    flows_.emplace_back();
  } else {
    id = free_.back();
    free_.pop_back();
  }
  Flow& f = flows_[static_cast<std::size_t>(id)];
  f.path = std::move(path);
  f.slot_in_channel.resize(f.path.size());
  f.remaining = bytes;
  f.rate = 0;
  f.updated_ns = rt_.now().ns();
  f.finish_ns = std::numeric_limits<std::int64_t>::max();
  f.latency = latency;
  f.max_rate = max_rate;
  f.done = std::move(done);
  f.alive = true;
  ++f.generation;
  for (std::size_t i = 0; i < f.path.size(); ++i) {
    auto& ch = channels_[static_cast<std::size_t>(f.path[i])];
    f.slot_in_channel[i] = static_cast<int>(ch.flows.size());
    ch.flows.push_back(id);
    if (max_rate > 0) {
      ch.capped += max_rate;
    } else {
      ++ch.uncapped;
    }
    mark_dirty(f.path[i]);
  }
  ++active_;
  schedule_recompute();
}

void FlowModel::set_capacity(int channel, double bytes_per_s) {
  auto& ch = channels_[static_cast<std::size_t>(channel)];
  if (ch.capacity > 0 && bytes_per_s <= 0) ++dead_channels_;
  if (ch.capacity <= 0 && bytes_per_s > 0) --dead_channels_;
  ch.capacity = bytes_per_s;
  if (bytes_per_s > 0) {
    mark_dirty(channel);
    schedule_recompute();
    return;
  }
  std::vector<Done> failed;
  while (!ch.flows.empty()) failed.push_back(remove(ch.flows.back()));
  schedule_recompute();
  for (auto& d : failed) rt_.call_after(rt::Duration(), [d = std::move(d), channel] { d(channel); });
}

void FlowModel::mark_dirty(int channel) { dirty_.push_back(channel); }

void FlowModel::schedule_recompute() {
  if (recompute_pending_) return;
  recompute_pending_ = true;
  rt_.call_after(rt::Duration(), [this] { recompute(); }, kRecomputePriority);
}

void FlowModel::settle(Flow& f, std::int64_t now_ns) {
  f.remaining = std::max(0.0, f.remaining - f.rate * static_cast<double>(now_ns - f.updated_ns) * 1e-9);
  f.updated_ns = now_ns;
}

void FlowModel::recompute() {
  recompute_pending_ = false;
  if (dirty_.empty()) return;
  ++recomputes_;
  const std::int64_t now = rt_.now().ns();
  // The connected component of channels and flows reachable from the dirty channels.
  ++stamp_;
  comp_flows_.clear();
  comp_channels_.clear();
  for (int c : dirty_) {
    auto& ch = channels_[static_cast<std::size_t>(c)];
    if (ch.stamp == stamp_) continue;
    ch.stamp = stamp_;
    comp_channels_.push_back(c);
  }
  dirty_.clear();
  for (std::size_t i = 0; i < comp_channels_.size(); ++i) {
    for (int fid : channels_[static_cast<std::size_t>(comp_channels_[i])].flows) {
      Flow& f = flows_[static_cast<std::size_t>(fid)];
      if (f.stamp == stamp_) continue;
      f.stamp = stamp_;
      comp_flows_.push_back(fid);
      for (int c : f.path) {
        auto& ch = channels_[static_cast<std::size_t>(c)];
        if (ch.stamp == stamp_) continue;
        ch.stamp = stamp_;
        comp_channels_.push_back(c);
      }
    }
  }
  cap_.resize(comp_channels_.size());
  for (std::size_t i = 0; i < comp_channels_.size(); ++i) {
    auto& ch = channels_[static_cast<std::size_t>(comp_channels_[i])];
    ch.local = static_cast<int>(i);
    cap_[i] = ch.capacity;
    usage_.add(comp_channels_[i], rt::Time::from_ns(ch.since_ns), rt::Time::from_ns(now), ch.load);
    ch.carried_bytes += ch.load * static_cast<double>(now - ch.since_ns) * 1e-9;
    ch.since_ns = now;
    ch.load = 0;
  }
  offset_.assign(1, 0);
  path_.clear();
  for (int fid : comp_flows_) {
    Flow& f = flows_[static_cast<std::size_t>(fid)];
    settle(f, now);
    for (int c : f.path) path_.push_back(channels_[static_cast<std::size_t>(c)].local);
    if (f.max_rate > 0) {
      // A cap is a channel of its own, after the real ones: max-min then fixes the flow at it or below.
      path_.push_back(static_cast<int>(cap_.size()));
      cap_.push_back(f.max_rate);
    }
    offset_.push_back(static_cast<int>(path_.size()));
  }
  fill_.solve(cap_, offset_, path_, rate_);
  rerated_ += comp_flows_.size();
  for (std::size_t i = 0; i < comp_flows_.size(); ++i) {
    const int fid = comp_flows_[i];
    Flow& f = flows_[static_cast<std::size_t>(fid)];
    f.rate = rate_[i];
    for (int c : f.path) channels_[static_cast<std::size_t>(c)].load += f.rate;
    const double secs = f.rate > 0 ? f.remaining / f.rate : std::numeric_limits<double>::infinity();
    const std::int64_t was = f.finish_ns;
    f.finish_ns = std::isfinite(secs) && secs < 9e9 ? now + static_cast<std::int64_t>(std::ceil(secs * 1e9))
                                                    : std::numeric_limits<std::int64_t>::max();
    if (f.finish_ns != was && f.finish_ns != std::numeric_limits<std::int64_t>::max()) push_due(fid);
  }
  // Stale entries are at most a few times the live ones.
  if (finish_.size() > 4 * (active_ + 64)) {
    std::erase_if(finish_, [this](const Due& d) { return !stands(d); });
    std::make_heap(finish_.begin(), finish_.end(), std::greater<>());
  }
  arm_timer();
}

bool FlowModel::stands(const Due& d) const {
  const Flow& f = flows_[static_cast<std::size_t>(d.flow)];
  return f.alive && f.generation == d.generation && f.finish_ns == d.at_ns;
}

void FlowModel::push_due(int flow) {
  const Flow& f = flows_[static_cast<std::size_t>(flow)];
  finish_.push_back(Due{f.finish_ns, flow, f.generation});
  std::push_heap(finish_.begin(), finish_.end(), std::greater<>());
}

bool FlowModel::clean_top() {
  while (!finish_.empty() && !stands(finish_.front())) {
    std::pop_heap(finish_.begin(), finish_.end(), std::greater<>());
    finish_.pop_back();
  }
  return !finish_.empty();
}

void FlowModel::arm_timer() {
  if (!clean_top()) {
    timer_.cancel();
    timer_at_ = -1;
    return;
  }
  const std::int64_t at = finish_.front().at_ns;
  if (at == timer_at_ && timer_.pending()) return;
  timer_.cancel();
  timer_at_ = at;
  timer_ = rt_.call_at(rt::Time::from_ns(std::max(at, rt_.now().ns())), [this] { on_timer(); });
}

FlowModel::Done FlowModel::remove(int fid) {
  Flow& f = flows_[static_cast<std::size_t>(fid)];
  for (std::size_t i = 0; i < f.path.size(); ++i) {
    auto& ch = channels_[static_cast<std::size_t>(f.path[i])];
    const auto slot = static_cast<std::size_t>(f.slot_in_channel[i]);
    const int moved = ch.flows.back();
    ch.flows[slot] = moved;
    ch.flows.pop_back();
    if (f.max_rate > 0) {
      ch.capped = ch.flows.empty() ? 0 : ch.capped - f.max_rate;  // no drift once it empties
    } else {
      --ch.uncapped;
    }
    if (moved != fid) {
      Flow& m = flows_[static_cast<std::size_t>(moved)];
      for (std::size_t j = 0; j < m.path.size(); ++j) {
        if (m.path[j] == f.path[i]) m.slot_in_channel[j] = static_cast<int>(slot);
      }
    }
    mark_dirty(f.path[i]);
  }
  f.finish_ns = std::numeric_limits<std::int64_t>::max();
  f.alive = false;
  f.path.clear();
  Done done = std::move(f.done);
  f.done = nullptr;
  free_.push_back(fid);
  --active_;
  return done;
}

void FlowModel::on_timer() {
  timer_at_ = -1;
  const std::int64_t now = rt_.now().ns();
  std::vector<std::pair<rt::Duration, Done>> finished;
  while (clean_top() && finish_.front().at_ns <= now) {
    const int fid = finish_.front().flow;
    std::pop_heap(finish_.begin(), finish_.end(), std::greater<>());
    finish_.pop_back();
    const rt::Duration latency = flows_[static_cast<std::size_t>(fid)].latency;
    finished.emplace_back(latency, remove(fid));
  }
  recompute();
  arm_timer();
  for (auto& [latency, done] : finished) {
    if (latency > rt::Duration()) {
      rt_.call_after(latency, [d = std::move(done)] { d(kNoFailure); });
    } else {
      done(kNoFailure);
    }
  }
}

}  // namespace nvl::fabric
