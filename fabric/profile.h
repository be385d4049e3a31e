#pragma once
// The shapes and calibrated numbers of the fabric, as loaded from fabric/profiles/*.json. Bandwidths are
// per direction; every number's source is in the profile file.
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "emu/rt/time.h"
#include "fabric/measured_nccl_table.h"

namespace nvl::fabric {

struct LinkSpec {
  double bytes_per_s = 0;  // per direction
  rt::Duration latency;    // one hop
};

// An all-to-all kernel (TensorRT-LLM one-sided, DeepEP low-latency): launch, a per-peer setup cost,
// the flag/barrier synchronisation that overlaps the data, and the achievable share of link bandwidth.
struct AllToAllKernel {
  rt::Duration launch;
  rt::Duration per_peer;
  rt::Duration sync;
  double efficiency = 1;
};

// A NCCL-style kernel (ring, tree, NVLS): launch, latency per algorithm step, achievable bandwidth share.
struct CollectiveKernel {
  rt::Duration launch;
  rt::Duration per_step;
  double efficiency = 1;
};

struct CollectiveProfile {
  AllToAllKernel a2a_plain;
  AllToAllKernel a2a_dispatch;
  AllToAllKernel a2a_combine;
  CollectiveKernel ring;
  CollectiveKernel tree;
  CollectiveKernel nvls;
  // all_reduce: tree at or below this size, then NVLS where the group sits in one NVLink domain with
  // NVLink SHARP, else ring (what NCCL's tuner picks on these systems).
  std::uint64_t tree_max_bytes = 0;
  bool nvls_available = false;
  // When the profile names one: the uncontended times of all-reduce, all-gather and reduce-scatter come
  // from measurement; the kernels above keep choosing the algorithm, hence the links the data crosses.
  std::shared_ptr<const MeasuredNcclTable> measured_nccl;
  // Kernel library (cluster.kernel_library) -> the measured times of the all-reduce it runs itself in
  // place of NCCL's (SGLang's custom all-reduce, TensorRT-LLM's AllReduce op), for groups in one NVLink
  // domain; Fabric::use_kernel_library picks one.
  std::map<std::string, std::shared_ptr<const MeasuredNcclTable>> library_all_reduce;
};

// One rack or node: `units` of them make a cluster. A unit has trays; a tray has GPUs, hosts (Grace or
// x86 CPUs), NICs and PCIe switches; the unit's GPUs share one NVLink domain through NVSwitch chips.
struct NodeProfile {
  std::string name;
  std::string file;
  std::string unit_name;  // "rack" or "node": element names start "rack0/" or "node3/"
  std::string tray_name;  // "tray"; empty when the unit has a single tray and no tray level in names
  std::string host_name;  // "grace" or "cpu"
  int trays = 1;
  int gpus_per_tray = 0;
  int hosts_per_tray = 0;
  int nics_per_tray = 0;
  int pcie_switches_per_tray = 0;
  int nvswitch_chips = 0;
  int nvlink_lanes_per_gpu = 0;  // lane i goes to chip i * chips / lanes
  LinkSpec nvlink_lane;
  // Host <-> its GPUs over NVLink-C2C: each GPU's link has its share of the host's C2C rate (c2c, per
  // direction), copies over it reach the measured share of that in each direction, and every GPU's
  // C2C traffic, both ways, shares the host's memory bandwidth.
  bool has_c2c = false;
  LinkSpec c2c;
  double c2c_host_to_device_efficiency = 1;
  double c2c_device_to_host_efficiency = 1;
  double host_memory_bytes_per_s = 0;
  LinkSpec pcie_gpu;   // GPU <-> PCIe switch
  LinkSpec pcie_nic;   // NIC <-> PCIe switch
  LinkSpec pcie_host;  // PCIe switch <-> host
  LinkSpec nic;        // NIC <-> leaf port
  rt::Duration rdma_overhead;     // per RDMA operation: posting, completion
  double rdma_efficiency = 1;     // achievable share of NIC bandwidth for bulk RDMA
  rt::Duration message_overhead;  // per control-plane message: software stack on both ends
  CollectiveProfile collectives;

  int gpus() const { return trays * gpus_per_tray; }
  int hosts() const { return trays * hosts_per_tray; }
  int nics() const { return trays * nics_per_tray; }
};

// The leaf/spine network joining units: NICs attach to leaves in order, each leaf has one uplink per spine,
// sized so that the leaf's uplink capacity is its NIC capacity divided by the oversubscription.
struct ScaleOutProfile {
  std::string name;
  std::string file;
  int nics_per_leaf = 0;
  int spines = 0;
  double port_bytes_per_s = 0;  // leaf port speed; a NIC link runs at the slower of port and NIC
  double oversubscription = 1;
  rt::Duration leaf_latency;   // one leaf traversal
  rt::Duration spine_latency;  // one spine traversal
};

struct ClusterSpec {
  std::string file;
  NodeProfile node;
  int units = 1;
  ScaleOutProfile scale_out;
};

}  // namespace nvl::fabric
