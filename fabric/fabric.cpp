#include "fabric/fabric.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

namespace nvl::fabric {

namespace {
std::vector<double> nominal_capacities(const Topology& t) {
  std::vector<double> cap(t.channels().size(), 0.0);
  for (std::size_t c = 0; c < cap.size(); ++c) {
    for (int l : t.channels()[c].links) cap[c] += t.links()[static_cast<std::size_t>(l)].bytes_per_s;
  }
  return cap;
}
}  // namespace

Fabric::Fabric(rt::Runtime& rt, ClusterSpec spec, FabricOptions opts)
    : rt_(rt),
      topo_(spec),
      nominal_(nominal_capacities(topo_)),
      flows_(rt, nominal_, opts.usage_interval),
      link_down_(topo_.links().size(), 0),
      link_factor_(topo_.links().size(), 1.0),
      element_down_(topo_.elements().size(), 0),
      reserved_until_(topo_.channels().size(), 0),
      holds_on_(topo_.channels().size()),
      partition_side_(static_cast<std::size_t>(topo_.host_count()), -1),
      known_routes_(static_cast<std::size_t>(topo_.gpu_count())),
      held_bytes_(topo_.channels().size(), 0.0) {}

void Fabric::use_kernel_library(const std::string& library) {
  const auto& tables = profile().collectives.library_all_reduce;
  const auto it = tables.find(library);
  library_all_reduce_ = it != tables.end() ? it->second : nullptr;
}

bool Fabric::same_domain(hal::DeviceId a, hal::DeviceId b) const { return topo_.gpu(a).unit == topo_.gpu(b).unit; }

hal::HostId Fabric::host_of(const Endpoint& e) const {
  return e.kind == Endpoint::Kind::host ? e.index : topo_.gpu(e.index).host;
}

int Fabric::nic_of(const Endpoint& e) const {
  if (e.nic >= 0) {
    if (e.nic >= topo_.nic_count()) throw std::invalid_argument("NIC index " + std::to_string(e.nic) + " out of range");
    return e.nic;
  }
  if (e.kind == Endpoint::Kind::gpu) return topo_.gpu(e.index).nic;
  const auto& nics = topo_.host(e.index).nics;
  if (nics.empty()) throw std::invalid_argument("host " + std::to_string(e.index) + " has no NIC");
  return nics.front();
}

void Fabric::append_nic_path(Route& r, const Endpoint& e, bool outbound) const {
  const NicPorts& n = topo_.nic(nic_of(e));
  const PcieSwitchPorts& nsw = topo_.pcie_switch(n.pcie_switch);
  std::vector<int> part;  // outbound order: endpoint -> NIC
  if (e.kind == Endpoint::Kind::gpu) {
    const GpuPorts& g = topo_.gpu(e.index);
    if (outbound) {
      part = {g.pcie_up};
      if (g.pcie_switch != n.pcie_switch) {
        part.push_back(topo_.pcie_switch(g.pcie_switch).to_host);
        part.push_back(nsw.from_host);
      }
      part.push_back(n.pcie_down);
    } else {
      part = {n.pcie_up};
      if (g.pcie_switch != n.pcie_switch) {
        part.push_back(nsw.to_host);
        part.push_back(topo_.pcie_switch(g.pcie_switch).from_host);
      }
      part.push_back(g.pcie_down);
    }
  } else {
    part = outbound ? std::vector<int>{nsw.from_host, n.pcie_down} : std::vector<int>{n.pcie_up, nsw.to_host};
  }
  r.channels.insert(r.channels.end(), part.begin(), part.end());
}

Route Fabric::route(const Endpoint& src, const Endpoint& dst, hal::RdmaPath path) const {
  const bool both_gpus = src.kind == Endpoint::Kind::gpu && dst.kind == Endpoint::Kind::gpu;
  Route r;
  bool nvlink_possible = false;
  if (both_gpus) {
    nvlink_possible = same_domain(src.index, dst.index);
  } else if (src.kind != dst.kind) {
    const Endpoint& g = src.kind == Endpoint::Kind::gpu ? src : dst;
    const Endpoint& h = src.kind == Endpoint::Kind::host ? src : dst;
    nvlink_possible = topo_.gpu(g.index).host == h.index;
  }
  const bool use_nvlink = path == hal::RdmaPath::nvlink || (path == hal::RdmaPath::automatic && nvlink_possible);
  const std::string op = "route";
  if (use_nvlink) {
    if (!nvlink_possible) {
      throw hal::HalError(src.kind == Endpoint::Kind::gpu ? src.index : -1, op, hal::Xid::none,
                          "no NVLink path between the endpoints: they are not in one NVLink domain");
    }
    r.nvlink = true;
    if (both_gpus) {
      if (src.index != dst.index) r.channels = {topo_.gpu(src.index).nvl_up, topo_.gpu(dst.index).nvl_down};
    } else {
      const bool to_host = dst.kind == Endpoint::Kind::host;
      const GpuPorts& g = topo_.gpu(to_host ? src.index : dst.index);
      const HostPorts& h = topo_.host(to_host ? dst.index : src.index);
      if (h.memory >= 0) {
        r.channels = to_host ? std::vector<int>{g.c2c_up, h.memory} : std::vector<int>{h.memory, g.c2c_down};
      } else {
        const PcieSwitchPorts& sw = topo_.pcie_switch(g.pcie_switch);
        r.channels = to_host ? std::vector<int>{g.pcie_up, sw.to_host} : std::vector<int>{sw.from_host, g.pcie_down};
      }
    }
  } else {
    const hal::HostId hs = host_of(src);
    const hal::HostId hd = host_of(dst);
    if (partitioned(hs, hd)) {
      throw hal::HalError(src.kind == Endpoint::Kind::gpu ? src.index : -1, op, hal::Xid::none,
                          "network partition between " + topo_.elements()[static_cast<std::size_t>(topo_.host(hs).element)].name +
                              " and " + topo_.elements()[static_cast<std::size_t>(topo_.host(hd).element)].name);
    }
    const NicPorts& ns = topo_.nic(nic_of(src));
    const NicPorts& nd = topo_.nic(nic_of(dst));
    append_nic_path(r, src, true);
    r.channels.push_back(ns.tx);
    if (ns.leaf != nd.leaf) {
      r.channels.push_back(topo_.leaf(ns.leaf).up);
      r.channels.push_back(topo_.leaf(nd.leaf).down);
    }
    r.channels.push_back(nd.rx);
    append_nic_path(r, dst, false);
  }
  for (int c : r.channels) r.latency += topo_.channels()[static_cast<std::size_t>(c)].latency;
  check(r, src, op);
  return r;
}

rt::Duration Fabric::append_gpu_route(hal::DeviceId src, hal::DeviceId dst, std::vector<int>& channels) const {
  std::vector<KnownRoute>& row = known_routes_.at(static_cast<std::size_t>(src));
  if (row.empty()) row.resize(static_cast<std::size_t>(topo_.gpu_count()));
  KnownRoute& k = row.at(static_cast<std::size_t>(dst));
  if (k.count < 0) {
    const Route r = route(Endpoint::gpu(src), Endpoint::gpu(dst), hal::RdmaPath::automatic);
    k = KnownRoute{static_cast<int>(known_channels_.size()), static_cast<int>(r.channels.size()), r.latency};
    known_channels_.insert(known_channels_.end(), r.channels.begin(), r.channels.end());
  }
  const auto first = known_channels_.begin() + k.first;
  const auto last = first + k.count;
  // A link may have gone down since: route() then names it, as it would have without the memory.
  if (flows_.dead_channels() > 0 && std::any_of(first, last, [&](int c) { return flows_.capacity(c) <= 0; })) {
    route(Endpoint::gpu(src), Endpoint::gpu(dst), hal::RdmaPath::automatic);
  }
  channels.insert(channels.end(), first, last);
  return k.latency;
}

void Fabric::check(const Route& r, const Endpoint& src, const std::string& op) const {
  for (int c : r.channels) {
    if (flows_.capacity(c) <= 0) throw error_for_channel(c, op, src.kind == Endpoint::Kind::gpu ? src.index : -1);
  }
}

void Fabric::transfer(const Endpoint& src, const Endpoint& dst, std::uint64_t bytes, hal::RdmaPath path,
                      double efficiency, rt::Duration overhead, const std::string& op, TransferDone done) {
  Route r;
  try {
    r = route(src, dst, path);
  } catch (const hal::HalError& e) {
    rt_.call_after(rt::Duration(), [e, done = std::move(done)] { done(&e); });
    return;
  }
  const hal::DeviceId device = src.kind == Endpoint::Kind::gpu ? src.index : -1;
  if (transfer_observer_) {
    done = [this, span = TransferSpan{{}, r.channels.empty() ? -1 : r.channels.front(), bytes, rt_.now(), {}, true}, op,
            done = std::move(done)](const hal::HalError* error) mutable {
      span.op = op;
      span.end = rt_.now();
      span.ok = error == nullptr;
      if (transfer_observer_) transfer_observer_(span);
      done(error);
    };
  }
  auto finish = [this, op, device, done = std::move(done)](int failed) {
    if (failed == FlowModel::kNoFailure) {
      done(nullptr);
    } else {
      const hal::HalError e = error_for_channel(failed, op, device);
      done(&e);
    }
  };
  const double wire = static_cast<double>(bytes) / efficiency;
  rt_.call_after(overhead, [this, r = std::move(r), wire, finish = std::move(finish)]() mutable {
    start_flow(std::move(r.channels), wire, r.latency, std::move(finish));
  });
}

bool Fabric::healthy(int channel) const { return flows_.capacity(channel) == nominal_capacity(channel); }

std::uint64_t Fabric::hold(HeldTraffic traffic, rt::Time until, HoldEvents events) {
  const std::vector<int>& channels = *traffic.channels;
  const std::int64_t now = rt_.now().ns();
  for (std::size_t i = 0; i < channels.size(); ++i) {
    const auto c = static_cast<std::size_t>(channels[i]);
    reserved_until_[c] = std::max(reserved_until_[c], until.ns());
    held_bytes_[c] += (*traffic.bytes)[i] * traffic.scale;
  }
  const std::uint64_t id = next_hold_++;
  holds_.push_back(Hold{id, std::move(traffic), std::move(events), now, until.ns(), {}, 0, false, {}, {}});
  list_channels(holds_.back());
  bool shared = false;
  for (std::size_t i = 0; i < channels.size(); ++i) {
    const int c = channels[i];
    const double flowing = flows_.demand(c);
    if (std::isinf(flowing)) {
      shared = to_flow(holds_.back(), i) || shared;
    } else if (const double others = held_by_others(holds_.back(), c, now) + flowing;
               others > 0 && others + held_rate(holds_.back(), i, now) > flows_.capacity(c) * (1 + 1e-9)) {
      // Holds on one channel wanting more than it has (two streams' collectives overlapping, pools
      // sharing GPUs), or more than the capped flows of holds turned to flows there leave: they all run
      // as flows there, so that they share it. Holds that fit (latency-bound calls, repeated calls'
      // average demand) stay held: flows would change nothing.
      share_held(c);
      shared = holds_.back().slowed || shared;
    }
  }
  Hold& h = holds_.back();
  if (shared && !std::exchange(h.slowed, true) && h.events.slowed) {
    auto slowed = h.events.slowed;
    slowed();
  }
  return id;
}

void Fabric::release(std::uint64_t hold_id) {
  const auto it = std::lower_bound(holds_.begin(), holds_.end(), hold_id,
                                   [](const Hold& h, std::uint64_t id) { return h.id < id; });
  if (it == holds_.end() || it->id != hold_id) return;
  it->drain_timer.cancel();
  it->wire_timer.cancel();
  unlist_channels(*it);
  holds_.erase(it);
}

void Fabric::list_channels(const Hold& h) {
  const std::vector<int>& channels = *h.traffic.channels;
  for (std::size_t i = 0; i < channels.size(); ++i) {
    // A channel listed twice counts once, where it first comes.
    if (i > 0 && channels[i] == channels[i - 1]) continue;
    holds_on_[static_cast<std::size_t>(channels[i])].push_back(HoldOnChannel{h.id, i});
  }
}

void Fabric::unlist_channels(const Hold& h) {
  for (const int c : *h.traffic.channels) {
    std::erase_if(holds_on_[static_cast<std::size_t>(c)], [&](const HoldOnChannel& on) { return on.id == h.id; });
  }
}

Fabric::Hold* Fabric::find_hold(std::uint64_t id) { return const_cast<Hold*>(std::as_const(*this).find_hold(id)); }

const Fabric::Hold* Fabric::find_hold(std::uint64_t id) const {
  const auto it = std::lower_bound(holds_.begin(), holds_.end(), id, [](const Hold& h, std::uint64_t i) { return h.id < i; });
  return it != holds_.end() && it->id == id ? &*it : nullptr;
}

double Fabric::held_rest(const Hold& h, std::size_t i, std::int64_t now) const {
  const double total = (*h.traffic.bytes)[i] * h.traffic.scale;
  const std::int64_t from = moving_from(h);
  std::int64_t to = h.until_ns;
  if (!h.traffic.periodic) {
    to = std::min(h.until_ns, from + static_cast<std::int64_t>(std::ceil((*h.traffic.seconds)[i] * 1e9)));
  }
  if (now >= to) return 0;
  if (now <= from) return total;
  return total * static_cast<double>(to - now) / static_cast<double>(to - from);
}

std::int64_t Fabric::moving_from(const Hold& h) {
  // Repeated calls move their data by the end of their span, however late they start (a lead of a
  // whole span would be no traffic at all).
  const std::int64_t from = h.start_ns + h.traffic.wire_from.ns();
  return h.traffic.periodic ? std::min(from, h.until_ns - 1) : from;
}

double Fabric::held_rate(const Hold& h, std::size_t i, std::int64_t now) const {
  const double bytes = (*h.traffic.bytes)[i];
  if (h.traffic.periodic) {
    const std::int64_t from = moving_from(h);
    return now >= from && now < h.until_ns ? bytes * h.traffic.scale / (static_cast<double>(h.until_ns - from) * 1e-9) : 0;
  }
  const double seconds = (*h.traffic.seconds)[i];
  return held_rest(h, i, now) > 0 && seconds > 0 ? bytes / seconds : 0;
}

double Fabric::held_by_others(const Hold& h, int channel, std::int64_t now) const {
  if (reserved_until_[static_cast<std::size_t>(channel)] <= now) return 0;
  double rate = 0;
  for (const HoldOnChannel& on : holds_on_[static_cast<std::size_t>(channel)]) {
    if (on.id == h.id) continue;
    const Hold& o = *find_hold(on.id);
    const std::size_t j = on.at;
    const char state = o.flowing.empty() ? kHeld : o.flowing[j];
    if (state == kWaiting) return std::numeric_limits<double>::infinity();
    if (state == kHeld) rate += held_rate(o, j, now);
  }
  return rate;
}

bool Fabric::to_flow(Hold& h, std::size_t i) {
  if (h.flowing.empty()) h.flowing.assign(h.traffic.channels->size(), kHeld);
  if (h.flowing[i] != kHeld) return false;
  const std::int64_t now = rt_.now().ns();
  const double rest = held_rest(h, i, now);
  if (rest <= 0) return false;
  const int c = (*h.traffic.channels)[i];
  held_bytes_[static_cast<std::size_t>(c)] -= rest;  // the flows carry it
  h.drain_timer.cancel();
  const std::int64_t wire_at = moving_from(h);
  if (wire_at <= now) {
    start_held_flows(h, i, rest);
    return true;
  }
  // The call's launch moves nothing: its data starts later, all of it still to move.
  h.flowing[i] = kWaiting;
  h.in_flight += std::max(1, (*h.traffic.flows)[i]);
  if (!h.wire_timer.pending()) {
    h.wire_timer = rt_.call_at(rt::Time::from_ns(wire_at), [this, id = h.id] {
      Hold* held = find_hold(id);
      if (held == nullptr) return;
      for (std::size_t j = 0; j < held->flowing.size(); ++j) {
        if (held->flowing[j] != kWaiting) continue;
        held->in_flight -= std::max(1, (*held->traffic.flows)[j]);
        // Held traffic on the channel since it was turned to wait shares it from now.
        share_held((*held->traffic.channels)[j]);
        held = find_hold(id);
        if (held == nullptr) return;
        start_held_flows(*held, j, (*held->traffic.bytes)[j] * held->traffic.scale);
      }
    });
  }
  return true;
}

void Fabric::start_held_flows(Hold& h, std::size_t i, double rest) {
  h.flowing[i] = kFlowing;
  const int c = (*h.traffic.channels)[i];
  const int k = std::max(1, (*h.traffic.flows)[i]);
  // Each flow at most at its share of the rate the hold moves its bytes at alone: a call's wire rate;
  // repeated calls' average over their span, since their bursts come once a period and other traffic
  // meets them only that often (at the wire rate, the whole span's bursts would crowd into its first
  // moments and halve whatever shares them then).
  const double cap = held_rate(h, i, rt_.now().ns()) / k;
  h.in_flight += k;
  const std::uint64_t id = h.id;
  for (int f = 0; f < k; ++f) {
    flows_.start({c}, rest / k, rt::Duration(), [this, id](int) {
      // A flow failed by a channel losing its capacity: the hold hears of it as lost (or is gone already).
      if (Hold* held = find_hold(id)) {
        --held->in_flight;
        maybe_drained(id);
      }
    }, cap);
  }
}

void Fabric::maybe_drained(std::uint64_t id) {
  Hold* h = find_hold(id);
  if (h == nullptr || h->in_flight > 0) return;
  const std::int64_t now = rt_.now().ns();
  if (now < h->until_ns) {
    h->drain_timer = rt_.call_at(rt::Time::from_ns(h->until_ns), [this, id] { maybe_drained(id); });
    return;
  }
  if (auto drained = h->events.drained) drained();
}

void Fabric::share_held(int channel) {
  if (reserved_until_[static_cast<std::size_t>(channel)] <= rt_.now().ns()) return;
  std::vector<std::function<void()>> slowed;
  for (const HoldOnChannel& on : holds_on_[static_cast<std::size_t>(channel)]) {
    Hold& h = *find_hold(on.id);
    if (to_flow(h, on.at) && !std::exchange(h.slowed, true) && h.events.slowed) slowed.push_back(h.events.slowed);
  }
  for (auto& s : slowed) s();
}

void Fabric::start_flow(std::vector<int> path, double bytes, rt::Duration latency, FlowModel::Done done) {
  for (int c : path) share_held(c);
  flows_.start(std::move(path), bytes, latency, std::move(done));
}

std::string Fabric::describe_down(int channel) const {
  const Channel& ch = topo_.channels()[static_cast<std::size_t>(channel)];
  for (int l : ch.links) {
    const Link& k = topo_.links()[static_cast<std::size_t>(l)];
    for (int e : {k.a, k.b}) {
      if (element_down_[static_cast<std::size_t>(e)]) {
        return topo_.elements()[static_cast<std::size_t>(e)].name + " is down (" + ch.name + ")";
      }
    }
  }
  std::string first;
  int down = 0;
  for (int l : ch.links) {
    if (!link_up(l)) {
      if (first.empty()) first = topo_.links()[static_cast<std::size_t>(l)].name;
      ++down;
    }
  }
  if (first.empty()) return ch.name + " has no capacity";
  if (ch.links.size() == 1) return "link " + first + " is down";
  return "link " + first + " is down, with all " + std::to_string(down) + " parallel links of " + ch.name;
}

hal::HalError Fabric::error_for_channel(int channel, const std::string& op, hal::DeviceId device) const {
  const Channel& ch = topo_.channels()[static_cast<std::size_t>(channel)];
  const bool nvlink = !ch.links.empty() && topo_.links()[static_cast<std::size_t>(ch.links.front())].kind == LinkKind::nvlink;
  return hal::HalError(device, op, nvlink ? hal::Xid::nvlink_error : hal::Xid::none, describe_down(channel));
}

bool Fabric::partitioned(hal::HostId a, hal::HostId b) const {
  const int sa = partition_side_[static_cast<std::size_t>(a)];
  const int sb = partition_side_[static_cast<std::size_t>(b)];
  return sa >= 0 && sb >= 0 && sa != sb;
}

}  // namespace nvl::fabric
