#include "fabric/topology.h"

#include <algorithm>

namespace nvl::fabric {

namespace {
// Spreads `count` items over `groups` in order: item i belongs to group i * groups / count.
int group_of(int i, int count, int groups) { return i * groups / count; }
}  // namespace

Topology::Topology(const ClusterSpec& spec) : spec_(spec) {
  for (int u = 0; u < spec_.units; ++u) build_unit(u);
  build_scale_out();
}

int Topology::add_element(std::string name, ElementKind kind) {
  const int id = static_cast<int>(elements_.size());
  by_name_.emplace(name, id);
  elements_.push_back(Element{std::move(name), kind});
  return id;
}

int Topology::add_channel(std::string name, rt::Duration latency) {
  channels_.push_back(Channel{std::move(name), {}, latency});
  return static_cast<int>(channels_.size()) - 1;
}

void Topology::add_link(LinkKind kind, int a, int b, const LinkSpec& spec, int ab, int ba) {
  const int id = static_cast<int>(links_.size());
  links_.push_back(Link{elements_[static_cast<std::size_t>(a)].name + "<->" + elements_[static_cast<std::size_t>(b)].name,
                        kind, a, b, spec.bytes_per_s, spec.latency, ab, ba});
  channels_[static_cast<std::size_t>(ab)].links.push_back(id);
  channels_[static_cast<std::size_t>(ba)].links.push_back(id);
}

void Topology::build_unit(int u) {
  const NodeProfile& p = spec_.node;
  const std::string unit = p.unit_name + std::to_string(u);
  std::vector<int> chips;
  for (int s = 0; s < p.nvswitch_chips; ++s) chips.push_back(add_element(unit + "/nvswitch" + std::to_string(s), ElementKind::nvswitch));
  for (int t = 0; t < p.trays; ++t) {
    const std::string tray = p.tray_name.empty() ? unit : unit + "/" + p.tray_name + std::to_string(t);
    const int host0 = static_cast<int>(hosts_.size());
    for (int h = 0; h < p.hosts_per_tray; ++h) {
      HostPorts hp{};
      hp.element = add_element(tray + "/" + p.host_name + std::to_string(h), ElementKind::host);
      hp.unit = u;
      if (p.has_c2c) {
        hp.memory = add_channel(elements_[static_cast<std::size_t>(hp.element)].name + " memory", rt::Duration());
        // One channel for both directions: the link is both its ends, so each counts half the rate.
        add_link(LinkKind::host_memory, hp.element, hp.element, LinkSpec{p.host_memory_bytes_per_s / 2, rt::Duration()},
                 hp.memory, hp.memory);
      }
      hosts_.push_back(hp);
    }
    const int switch0 = static_cast<int>(switches_.size());
    for (int s = 0; s < p.pcie_switches_per_tray; ++s) {
      PcieSwitchPorts sp{};
      sp.element = add_element(tray + "/pcie" + std::to_string(s), ElementKind::pcie_switch);
      sp.host = host0 + group_of(s, p.pcie_switches_per_tray, p.hosts_per_tray);
      const std::string& n = elements_[static_cast<std::size_t>(sp.element)].name;
      sp.to_host = add_channel(n + " to host", p.pcie_host.latency);
      sp.from_host = add_channel(n + " from host", p.pcie_host.latency);
      add_link(LinkKind::pcie, sp.element, hosts_[static_cast<std::size_t>(sp.host)].element, p.pcie_host, sp.to_host, sp.from_host);
      switches_.push_back(sp);
    }
    const int nic0 = static_cast<int>(nics_.size());
    for (int n = 0; n < p.nics_per_tray; ++n) {
      NicPorts np{};
      np.element = add_element(tray + "/nic" + std::to_string(n), ElementKind::nic);
      np.unit = u;
      np.pcie_switch = switch0 + group_of(n, p.nics_per_tray, p.pcie_switches_per_tray);
      const std::string& name = elements_[static_cast<std::size_t>(np.element)].name;
      np.pcie_up = add_channel(name + " pcie up", p.pcie_nic.latency);
      np.pcie_down = add_channel(name + " pcie down", p.pcie_nic.latency);
      add_link(LinkKind::pcie, np.element, switches_[static_cast<std::size_t>(np.pcie_switch)].element, p.pcie_nic, np.pcie_up,
               np.pcie_down);
      hosts_[static_cast<std::size_t>(switches_[static_cast<std::size_t>(np.pcie_switch)].host)].nics.push_back(
          static_cast<int>(nics_.size()));
      nics_.push_back(np);
    }
    for (int g = 0; g < p.gpus_per_tray; ++g) {
      GpuPorts gp{};
      gp.element = add_element(tray + "/gpu" + std::to_string(g), ElementKind::gpu);
      gp.unit = u;
      gp.host = host0 + group_of(g, p.gpus_per_tray, p.hosts_per_tray);
      gp.nic = nic0 + group_of(g, p.gpus_per_tray, p.nics_per_tray);
      gp.pcie_switch = switch0 + group_of(g, p.gpus_per_tray, p.pcie_switches_per_tray);
      const std::string& name = elements_[static_cast<std::size_t>(gp.element)].name;
      gp.nvl_up = add_channel(name + " nvlink up", p.nvlink_lane.latency);
      gp.nvl_down = add_channel(name + " nvlink down", p.nvlink_lane.latency);
      for (int l = 0; l < p.nvlink_lanes_per_gpu; ++l) {
        add_link(LinkKind::nvlink, gp.element, chips[static_cast<std::size_t>(group_of(l, p.nvlink_lanes_per_gpu, p.nvswitch_chips))],
                 p.nvlink_lane, gp.nvl_up, gp.nvl_down);
      }
      gp.pcie_up = add_channel(name + " pcie up", p.pcie_gpu.latency);
      gp.pcie_down = add_channel(name + " pcie down", p.pcie_gpu.latency);
      add_link(LinkKind::pcie, gp.element, switches_[static_cast<std::size_t>(gp.pcie_switch)].element, p.pcie_gpu, gp.pcie_up,
               gp.pcie_down);
      HostPorts& hp = hosts_[static_cast<std::size_t>(gp.host)];
      hp.gpus.push_back(static_cast<int>(gpus_.size()));
      gpus_.push_back(gp);
    }
    if (p.has_c2c) {
      // Each GPU's C2C link, a channel each way, carries its share of the host's C2C rate: one GPU's
      // copies do not speed up when its sibling idles (nvbandwidth measures each GPU at about half).
      for (int h = host0; h < static_cast<int>(hosts_.size()); ++h) {
        HostPorts& hp = hosts_[static_cast<std::size_t>(h)];
        LinkSpec share = p.c2c;
        share.bytes_per_s /= static_cast<double>(std::max<std::size_t>(hp.gpus.size(), 1));
        for (int g : hp.gpus) {
          GpuPorts& gp = gpus_[static_cast<std::size_t>(g)];
          const std::string& name = elements_[static_cast<std::size_t>(gp.element)].name;
          gp.c2c_up = add_channel(name + " c2c up", p.c2c.latency);
          gp.c2c_down = add_channel(name + " c2c down", p.c2c.latency);
          add_link(LinkKind::c2c, gp.element, hp.element, share, gp.c2c_up, gp.c2c_down);
        }
      }
    }
  }
}

void Topology::build_scale_out() {
  const ScaleOutProfile& s = spec_.scale_out;
  const int leaves = (nic_count() + s.nics_per_leaf - 1) / s.nics_per_leaf;
  LinkSpec port{std::min(spec_.node.nic.bytes_per_s, s.port_bytes_per_s), spec_.node.nic.latency};
  for (int l = 0; l < leaves; ++l) leaves_.push_back(LeafPorts{add_element("leaf" + std::to_string(l), ElementKind::leaf)});
  for (int n = 0; n < nic_count(); ++n) {
    NicPorts& np = nics_[static_cast<std::size_t>(n)];
    np.leaf = n / s.nics_per_leaf;
    const std::string& name = elements_[static_cast<std::size_t>(np.element)].name;
    // The leaf's traversal counts once per leaf: on the way in.
    np.tx = add_channel(name + " to leaf", port.latency + s.leaf_latency);
    np.rx = add_channel(name + " from leaf", port.latency);
    add_link(LinkKind::nic, np.element, leaves_[static_cast<std::size_t>(np.leaf)].element, port, np.tx, np.rx);
  }
  if (leaves < 2) return;
  std::vector<int> spines;
  for (int sp = 0; sp < s.spines; ++sp) spines.push_back(add_element("spine" + std::to_string(sp), ElementKind::spine));
  const LinkSpec lane{static_cast<double>(s.nics_per_leaf) * port.bytes_per_s / s.oversubscription / s.spines,
                      s.spine_latency};
  for (int l = 0; l < leaves; ++l) {
    LeafPorts& lp = leaves_[static_cast<std::size_t>(l)];
    const std::string& name = elements_[static_cast<std::size_t>(lp.element)].name;
    lp.up = add_channel(name + " to spines", s.spine_latency);
    lp.down = add_channel(name + " from spines", s.leaf_latency);
    for (int sp : spines) add_link(LinkKind::uplink, lp.element, sp, lane, lp.up, lp.down);
  }
}

int Topology::element(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

std::vector<int> Topology::links_between(int a, int b) const {
  std::vector<int> out;
  for (int l : links_of(a)) {
    const Link& k = links_[static_cast<std::size_t>(l)];
    if (k.a == b || k.b == b) out.push_back(l);
  }
  return out;
}

std::vector<int> Topology::links_of(int element) const {
  std::vector<int> out;
  for (std::size_t l = 0; l < links_.size(); ++l) {
    if (links_[l].a == element || links_[l].b == element) out.push_back(static_cast<int>(l));
  }
  return out;
}

int Topology::nic_index(int element) const {
  for (std::size_t n = 0; n < nics_.size(); ++n) {
    if (nics_[n].element == element) return static_cast<int>(n);
  }
  return -1;
}

}  // namespace nvl::fabric
