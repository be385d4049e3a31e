#pragma once
// hal::Network on the emulated fabric: a message from host A to host B crosses A's NIC, the leaf/spine
// network and B's NIC. Its latency is the profile's per-message software overhead plus the path's hop
// latencies plus its size at the path's narrowest bandwidth. Control messages are small, so they do not
// enter the flow model (they neither slow nor are slowed by bulk traffic); partitions, NIC and link
// faults do stop them.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/hal/network.h"
#include "fabric/fabric.h"

namespace nvl::fabric {

class HostNetwork final : public hal::Network {
 public:
  explicit HostNetwork(Fabric& fabric) : fabric_(fabric) {}

  void listen(hal::Address at, hal::MessageHandler handler) override;
  void unlisten(hal::Address at) override;
  void send(hal::Address from, hal::Address to, std::shared_ptr<const hal::Message> message,
            hal::SendDone done = {}) override;
  int host_count() const override { return fabric_.topology().host_count(); }

  std::uint64_t delivered() const { return delivered_; }
  std::uint64_t lost() const { return lost_; }

 private:
  // A message on the wire. They are kept here, and the delivery event names one by its index, so
  // that scheduling a delivery allocates nothing.
  struct InFlight {
    hal::Address from;
    hal::Address to;
    std::shared_ptr<const hal::Message> message;
    hal::SendDone done;
  };

  // The scale-out path between two hosts; throws hal::HalError naming what is in the way.
  const Route& route_between(hal::HostId from, hal::HostId to);
  void arrive(std::uint32_t id);
  void lose(const hal::HalError& e, const hal::SendDone& done);

  Fabric& fabric_;
  std::map<hal::Address, hal::MessageHandler> handlers_;
  // Paths between hosts depend only on the topology: each is computed once, by from * hosts + to.
  // Whether it is usable (partitions, channels down) is checked at every send.
  std::vector<std::optional<Route>> routes_;
  std::vector<InFlight> in_flight_;
  std::vector<std::uint32_t> free_in_flight_;
  std::uint64_t delivered_ = 0;
  std::uint64_t lost_ = 0;
};

}  // namespace nvl::fabric
