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

void HostNetwork::send(hal::Address from, hal::Address to, std::string payload, hal::SendDone done) {
  const int hosts = host_count();
  if (from.host < 0 || from.host >= hosts || to.host < 0 || to.host >= hosts) {
    throw std::out_of_range("network: send between hosts " + std::to_string(from.host) + " and " +
                            std::to_string(to.host) + " of " + std::to_string(hosts));
  }
  rt::Duration latency = fabric_.profile().message_overhead;
  if (from.host != to.host) {
    Route r;
    try {
      r = fabric_.route(Endpoint::host(from.host), Endpoint::host(to.host), hal::RdmaPath::scale_out);
    } catch (const hal::HalError& e) {
      fabric_.runtime().call_after(rt::Duration(), [this, e, done = std::move(done)] { lose(e, done); });
      return;
    }
    double narrowest = std::numeric_limits<double>::infinity();
    for (int c : r.channels) narrowest = std::min(narrowest, fabric_.flows().capacity(c));
    latency += r.latency + rt::from_seconds(static_cast<double>(payload.size()) / narrowest);
  }
  fabric_.runtime().call_after(latency, [this, from, to, payload = std::move(payload), done = std::move(done)]() mutable {
    const auto it = handlers_.find(to);
    if (it == handlers_.end()) {
      lose(hal::HalError(-1, "send", hal::Xid::none,
                         "no listener on host " + std::to_string(to.host) + " port " + std::to_string(to.port)),
           done);
      return;
    }
    ++delivered_;
    const hal::MessageHandler handler = it->second;  // the handler may unlisten itself
    if (done) done(nullptr);
    handler(from, std::move(payload));
  });
}

}  // namespace nvl::fabric
