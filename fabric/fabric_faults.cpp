// Fabric's fault injection: link down/up, degrade, flap, element down, partition.
#include <algorithm>
#include <stdexcept>

#include "fabric/fabric.h"

namespace nvl::fabric {

bool Fabric::link_up(int link) const {
  const Link& k = topo_.links()[static_cast<std::size_t>(link)];
  return !link_down_[static_cast<std::size_t>(link)] && !element_down_[static_cast<std::size_t>(k.a)] &&
         !element_down_[static_cast<std::size_t>(k.b)];
}

void Fabric::update_channel(int channel) {
  double cap = 0;
  for (int l : topo_.channels()[static_cast<std::size_t>(channel)].links) {
    if (link_up(l)) cap += topo_.links()[static_cast<std::size_t>(l)].bytes_per_s * link_factor_[static_cast<std::size_t>(l)];
  }
  if (cap == flows_.capacity(channel)) return;
  flows_.set_capacity(channel, cap);
  if (cap > 0) return;
  std::vector<std::function<void(int)>> lost;
  std::erase_if(holds_, [&](Hold& h) {
    if (!std::binary_search(h.traffic.channels->begin(), h.traffic.channels->end(), channel)) return false;
    lost.push_back(std::move(h.events.lost));
    unlist_channels(h);
    return true;
  });
  for (auto& l : lost) l(channel);
}

void Fabric::update_links(const std::vector<int>& links) {
  for (int l : links) {
    update_channel(topo_.links()[static_cast<std::size_t>(l)].channel_ab);
    update_channel(topo_.links()[static_cast<std::size_t>(l)].channel_ba);
  }
}

int Fabric::element_or_throw(std::string_view name) const {
  const int e = topo_.element(name);
  if (e < 0) throw std::invalid_argument("fabric: no element named '" + std::string(name) + "'");
  return e;
}

std::vector<int> Fabric::links_or_throw(std::string_view a, std::string_view b) const {
  auto links = topo_.links_between(element_or_throw(a), element_or_throw(b));
  if (links.empty()) {
    throw std::invalid_argument("fabric: no link between '" + std::string(a) + "' and '" + std::string(b) + "'");
  }
  return links;
}

void Fabric::set_link_down(std::string_view a, std::string_view b, bool down) {
  const auto links = links_or_throw(a, b);
  for (int l : links) link_down_[static_cast<std::size_t>(l)] = down ? 1 : 0;
  rt_.record("fabric", down ? "link_down" : "link_up",
             {{"link", topo_.links()[static_cast<std::size_t>(links.front())].name}, {"links", links.size()}},
             down ? rt::Severity::warning : rt::Severity::info);
  update_links(links);
}

void Fabric::degrade_link(std::string_view a, std::string_view b, double factor) {
  if (!(factor > 0 && factor <= 1)) {
    throw std::invalid_argument("fabric: degrade factor must be in (0, 1], got " + std::to_string(factor));
  }
  const auto links = links_or_throw(a, b);
  for (int l : links) link_factor_[static_cast<std::size_t>(l)] = factor;
  rt_.record("fabric", "link_degraded",
             {{"link", topo_.links()[static_cast<std::size_t>(links.front())].name}, {"factor", factor}},
             factor < 1 ? rt::Severity::warning : rt::Severity::info);
  update_links(links);
}

void Fabric::flap_link(std::string_view a, std::string_view b, rt::Duration down_for, rt::Duration up_for, int cycles) {
  links_or_throw(a, b);
  if (down_for <= rt::Duration() || up_for < rt::Duration() || cycles < 1) {
    throw std::invalid_argument("fabric: flap needs a positive down time, a non-negative up time and cycles >= 1");
  }
  rt_.record("fabric", "link_flap",
             {{"a", a}, {"b", b}, {"down_ns", down_for.ns()}, {"up_ns", up_for.ns()}, {"cycles", cycles}},
             rt::Severity::warning);
  const rt::Time t0 = rt_.now();
  for (int i = 0; i < cycles; ++i) {
    const rt::Time down_at = t0 + (down_for + up_for) * i;
    rt_.call_at(down_at, [this, x = std::string(a), y = std::string(b)] { set_link_down(x, y, true); });
    rt_.call_at(down_at + down_for, [this, x = std::string(a), y = std::string(b)] { set_link_down(x, y, false); });
  }
}

void Fabric::set_element_down(std::string_view name, bool down) {
  const int e = element_or_throw(name);
  element_down_[static_cast<std::size_t>(e)] = down ? 1 : 0;
  const auto kind = topo_.elements()[static_cast<std::size_t>(e)].kind;
  rt_.record("fabric", down ? "element_down" : "element_up",
             {{"element", name}, {"nic", kind == ElementKind::nic}}, down ? rt::Severity::warning : rt::Severity::info);
  update_links(topo_.links_of(e));
}

void Fabric::forget_routes() {
  for (auto& row : known_routes_) row.clear();
  known_channels_.clear();
  ++routes_version_;
}

void Fabric::partition(const std::vector<hal::HostId>& a, const std::vector<hal::HostId>& b) {
  std::fill(partition_side_.begin(), partition_side_.end(), -1);
  auto assign = [this](const std::vector<hal::HostId>& hosts, int side) {
    for (hal::HostId h : hosts) {
      if (h < 0 || h >= topo_.host_count()) throw std::invalid_argument("fabric: partition names host " + std::to_string(h));
      partition_side_[static_cast<std::size_t>(h)] = side;
    }
  };
  assign(a, 0);
  assign(b, 1);
  forget_routes();
  rt_.record("fabric", "partition", {{"a", a}, {"b", b}}, rt::Severity::warning);
}

void Fabric::heal_partition() {
  std::fill(partition_side_.begin(), partition_side_.end(), -1);
  forget_routes();
  rt_.record("fabric", "partition_healed");
}

}  // namespace nvl::fabric
