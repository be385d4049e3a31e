#include "fabric/host_network.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace nvl::fabric {

void HostNetwork::listen(hal::Address at, hal::MessageHandler handler) {
  if (!handlers_.emplace(at, std::move(handler)).second) {
    throw std::logic_error("network: host " + std::to_string(at.host) + " port " + std::to_string(at.port) +
                           " already has a listener");
  }
}

void HostNetwork::unlisten(hal::Address at) { handlers_.erase(at); }

void HostNetwork::lose(const hal::HalError& e, const hal::SendDone& done) {
  ++lost_;
  fabric_.runtime().record("fabric", "message_lost", {{"error", e.what()}}, rt::Severity::warning);
  if (done) done(&e);
}

const Route& HostNetwork::route_between(hal::HostId from, hal::HostId to) {
  const auto hosts = static_cast<std::size_t>(host_count());
  if (routes_.empty()) routes_.resize(hosts * hosts);
  std::optional<Route>& cached = routes_[static_cast<std::size_t>(from) * hosts + static_cast<std::size_t>(to)];
  if (cached && !fabric_.partitioned(from, to) &&
      std::all_of(cached->channels.begin(), cached->channels.end(), [&](int c) { return fabric_.flows().capacity(c) > 0; })) {
    return *cached;
  }
  // New, or something is in the way: the fabric finds the path again and names the obstacle.
  cached = fabric_.route(Endpoint::host(from), Endpoint::host(to), hal::RdmaPath::scale_out);
  return *cached;
}

void HostNetwork::send(hal::Address from, hal::Address to, std::shared_ptr<const hal::Message> message,
                       hal::SendDone done) {
  const int hosts = host_count();
  if (from.host < 0 || from.host >= hosts || to.host < 0 || to.host >= hosts) {
    throw std::out_of_range("network: send between hosts " + std::to_string(from.host) + " and " +
                            std::to_string(to.host) + " of " + std::to_string(hosts));
  }
  rt::Duration latency = fabric_.profile().message_overhead;
  if (from.host != to.host) {
    const Route* r = nullptr;
    try {
      r = &route_between(from.host, to.host);
    } catch (const hal::HalError& e) {
      fabric_.runtime().call_after(rt::Duration(), [this, e, done = std::move(done)] { lose(e, done); });
      return;
    }
    double narrowest = std::numeric_limits<double>::infinity();
    for (int c : r->channels) narrowest = std::min(narrowest, fabric_.flows().capacity(c));
    latency += r->latency + rt::from_seconds(static_cast<double>(message->wire_bytes()) / narrowest);
  }
  std::uint32_t id;
  if (free_in_flight_.empty()) {
    id = static_cast<std::uint32_t>(in_flight_.size());
    in_flight_.emplace_back();
  } else {
    id = free_in_flight_.back();
    free_in_flight_.pop_back();
  }
  in_flight_[id] = InFlight{from, to, std::move(message), std::move(done)};
  fabric_.runtime().call_after(latency, [this, id] { arrive(id); });
}

void HostNetwork::arrive(std::uint32_t id) {
  InFlight m = std::move(in_flight_[id]);
  free_in_flight_.push_back(id);
  const auto it = handlers_.find(m.to);
  if (it == handlers_.end()) {
    lose(hal::HalError(-1, "send", hal::Xid::none,
                       "no listener on host " + std::to_string(m.to.host) + " port " + std::to_string(m.to.port)),
         m.done);
    return;
  }
  ++delivered_;
  const hal::MessageHandler handler = it->second;  // the handler may unlisten itself
  if (m.done) m.done(nullptr);
  handler(m.from, *m.message);
}

}  // namespace nvl::fabric
