#pragma once
// The named elements of a cluster (GPUs, hosts, NICs, NVSwitch chips, PCIe switches, leaves, spines), the
// physical links between them (full duplex; faults act on them), and the channels the flow model shares:
// one direction of a group of parallel links (a GPU's 18 NVLink lanes to the 18 NVSwitch chips, a leaf's
// uplinks to every spine). A group keeps working while any member is up, at the capacity of those up.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "emu/rt/time.h"
#include "fabric/profile.h"

namespace nvl::fabric {

enum class ElementKind : std::uint8_t { gpu, host, nic, nvswitch, pcie_switch, leaf, spine };
// host_memory: a host's memory as the flows that read or write it over C2C see it (both directions).
enum class LinkKind : std::uint8_t { nvlink, c2c, pcie, nic, uplink, host_memory };

struct Element {
  std::string name;
  ElementKind kind;
};

struct Link {
  std::string name;  // "a<->b" by element names
  LinkKind kind;
  int a;
  int b;
  double bytes_per_s;  // per direction
  rt::Duration latency;
  int channel_ab;  // the channel carrying a -> b
  int channel_ba;
};

struct Channel {
  std::string name;  // "rack0/tray3/gpu2 nvlink up"
  std::vector<int> links;
  rt::Duration latency;
};

struct GpuPorts {
  int element, unit, host, nic, pcie_switch;
  int nvl_up, nvl_down;      // to / from the NVSwitch planes
  int pcie_up, pcie_down;    // to / from its PCIe switch
  int c2c_up = -1, c2c_down = -1;  // to / from its host over its C2C link, when the unit has C2C
};
struct HostPorts {
  int element, unit;
  std::vector<int> nics;     // cluster NIC indices, in order
  std::vector<int> gpus;     // GPUs it hosts (C2C or PCIe)
  int memory = -1;           // its memory, shared by every C2C flow of its GPUs either way (C2C units)
};
struct NicPorts {
  int element, unit, pcie_switch, leaf;
  int pcie_up, pcie_down;    // NIC -> switch, switch -> NIC
  int tx, rx;                // NIC -> leaf, leaf -> NIC
};
struct PcieSwitchPorts {
  int element, host;
  int to_host, from_host;
};
struct LeafPorts {
  int element;
  int up = -1, down = -1;    // to / from the spine layer; -1 when there is a single leaf
};

class Topology {
 public:
  explicit Topology(const ClusterSpec& spec);

  const ClusterSpec& spec() const { return spec_; }
  int gpu_count() const { return static_cast<int>(gpus_.size()); }
  int host_count() const { return static_cast<int>(hosts_.size()); }
  const GpuPorts& gpu(int i) const { return gpus_.at(static_cast<std::size_t>(i)); }
  const HostPorts& host(int i) const { return hosts_.at(static_cast<std::size_t>(i)); }
  const NicPorts& nic(int i) const { return nics_.at(static_cast<std::size_t>(i)); }
  const PcieSwitchPorts& pcie_switch(int i) const { return switches_.at(static_cast<std::size_t>(i)); }
  const LeafPorts& leaf(int i) const { return leaves_.at(static_cast<std::size_t>(i)); }
  int nic_count() const { return static_cast<int>(nics_.size()); }

  const std::vector<Element>& elements() const { return elements_; }
  const std::vector<Link>& links() const { return links_; }
  const std::vector<Channel>& channels() const { return channels_; }
  // Element index by name, -1 when unknown.
  int element(std::string_view name) const;
  // Links between two elements (both directions of the same cable), empty when none.
  std::vector<int> links_between(int a, int b) const;
  // Every link touching an element.
  std::vector<int> links_of(int element) const;
  // The NIC element index -> cluster NIC index, -1 when not a NIC.
  int nic_index(int element) const;

 private:
  int add_element(std::string name, ElementKind kind);
  int add_channel(std::string name, rt::Duration latency);
  // A link between a and b whose directions join channels ab and ba.
  void add_link(LinkKind kind, int a, int b, const LinkSpec& spec, int ab, int ba);
  void build_unit(int u);
  void build_scale_out();

  ClusterSpec spec_;
  std::vector<Element> elements_;
  std::vector<Link> links_;
  std::vector<Channel> channels_;
  std::map<std::string, int, std::less<>> by_name_;
  std::vector<GpuPorts> gpus_;
  std::vector<HostPorts> hosts_;
  std::vector<NicPorts> nics_;
  std::vector<PcieSwitchPorts> switches_;
  std::vector<LeafPorts> leaves_;
};

}  // namespace nvl::fabric
