#include "fabric/profile_loader.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "emu/rt/data_dir.h"
#include "emu/rt/errors.h"
#include "emu/rt/json_reader.h"

namespace nvl::fabric {

namespace {

using rt::JsonReader;
using rt::NumberRule;

int positive_count(JsonReader& r, std::string_view key) { return static_cast<int>(r.integer(key, 1, 1'000'000)); }

LinkSpec read_link(JsonReader r) {
  LinkSpec l;
  l.bytes_per_s = r.sourced("bytes_per_s", NumberRule::positive);
  l.latency = r.sourced_ns("latency_ns");
  r.finish();
  return l;
}

AllToAllKernel read_a2a(JsonReader r) {
  AllToAllKernel k;
  k.launch = r.sourced_ns("launch_ns");
  k.per_peer = r.sourced_ns("per_peer_ns");
  k.sync = r.sourced_ns("sync_ns");
  k.efficiency = r.sourced("efficiency", NumberRule::fraction);
  r.finish();
  return k;
}

CollectiveKernel read_kernel(JsonReader r) {
  CollectiveKernel k;
  k.launch = r.sourced_ns("launch_ns");
  k.per_step = r.sourced_ns("per_step_ns");
  k.efficiency = r.sourced("efficiency", NumberRule::fraction);
  r.finish();
  return k;
}

// A measured table ({file, source}); its file is named relative to the profile's.
std::shared_ptr<const MeasuredNcclTable> read_measured_table(JsonReader m, const std::string& profile_file) {
  const std::filesystem::path file = std::filesystem::path(profile_file).parent_path() / m.string("file");
  m.string("source");
  m.finish();
  return std::make_shared<const MeasuredNcclTable>(MeasuredNcclTable::load(file));
}

CollectiveProfile read_collectives(JsonReader r, const std::string& profile_file) {
  CollectiveProfile c;
  c.a2a_plain = read_a2a(r.object("a2a_plain"));
  c.a2a_dispatch = read_a2a(r.object("a2a_dispatch"));
  c.a2a_combine = read_a2a(r.object("a2a_combine"));
  c.ring = read_kernel(r.object("ring"));
  c.tree = read_kernel(r.object("tree"));
  c.nvls = read_kernel(r.object("nvls"));
  c.tree_max_bytes = static_cast<std::uint64_t>(r.sourced("tree_max_bytes"));
  c.nvls_available = r.boolean("nvls_available");
  if (r.has("measured_nccl")) c.measured_nccl = read_measured_table(r.object("measured_nccl"), profile_file);
  if (r.has("measured_library_all_reduce")) {
    JsonReader libraries = r.object("measured_library_all_reduce");
    for (const std::string& library : libraries.keys()) {
      c.library_all_reduce[library] = read_measured_table(libraries.object(library), profile_file);
    }
    libraries.finish();
  }
  r.finish();
  return c;
}

std::string resolve(const std::string& dir, const std::string& name) {
  return (dir.empty() ? default_profile_dir() : dir) + "/" + name + ".json";
}

}  // namespace

std::string default_profile_dir() {
  if (const char* env = std::getenv("NVL_FABRIC_PROFILE_DIR"); env != nullptr && *env != '\0') return env;
  return rt::data_dir("fabric/profiles", NVL_FABRIC_PROFILE_DIR).string();
}

std::vector<std::string> node_profile_names(const std::string& profile_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(profile_dir.empty() ? default_profile_dir() : profile_dir, ec)) {
    if (e.path().extension() != ".json") continue;
    if (JsonReader::parse_file(e.path()).contains("trays")) names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

NodeProfile load_node_profile(const std::string& file) {
  const nlohmann::json doc = JsonReader::parse_file(file);
  JsonReader r(doc, file, "");
  NodeProfile p;
  p.file = file;
  p.name = r.string("name");
  r.string("source");
  p.unit_name = r.string("unit_name");
  p.tray_name = r.string("tray_name");
  p.host_name = r.string("host_name");
  if (p.unit_name.empty()) r.fail("unit_name", "expected a non-empty name");
  if (p.host_name.empty()) r.fail("host_name", "expected a non-empty name");
  p.trays = positive_count(r, "trays");
  if (p.tray_name.empty() && p.trays != 1) r.fail("tray_name", "expected a name: the unit has several trays");
  p.gpus_per_tray = positive_count(r, "gpus_per_tray");
  p.hosts_per_tray = positive_count(r, "hosts_per_tray");
  p.nics_per_tray = positive_count(r, "nics_per_tray");
  p.pcie_switches_per_tray = positive_count(r, "pcie_switches_per_tray");
  {
    JsonReader n = r.object("nvlink");
    p.nvswitch_chips = positive_count(n, "switch_chips");
    p.nvlink_lanes_per_gpu = positive_count(n, "lanes_per_gpu");
    p.nvlink_lane = read_link(n.object("lane"));
    n.finish();
  }
  p.has_c2c = r.has("c2c");
  if (p.has_c2c) {
    JsonReader c = r.object("c2c");
    p.c2c.bytes_per_s = c.sourced("bytes_per_s", NumberRule::positive);
    p.c2c.latency = c.sourced_ns("latency_ns");
    p.c2c_host_to_device_efficiency = c.sourced("host_to_device_efficiency", NumberRule::fraction);
    p.c2c_device_to_host_efficiency = c.sourced("device_to_host_efficiency", NumberRule::fraction);
    p.host_memory_bytes_per_s = c.sourced("host_memory_bytes_per_s", NumberRule::positive);
    c.finish();
  }
  {
    JsonReader pc = r.object("pcie");
    p.pcie_gpu = read_link(pc.object("gpu"));
    p.pcie_nic = read_link(pc.object("nic"));
    p.pcie_host = read_link(pc.object("host"));
    pc.finish();
  }
  p.nic = read_link(r.object("nic"));
  {
    JsonReader rd = r.object("rdma");
    p.rdma_overhead = rd.sourced_ns("overhead_ns");
    p.rdma_efficiency = rd.sourced("efficiency", NumberRule::fraction);
    rd.finish();
  }
  {
    JsonReader m = r.object("messages");
    p.message_overhead = m.sourced_ns("overhead_ns");
    m.finish();
  }
  p.collectives = read_collectives(r.object("collectives"), file);
  r.finish();
  return p;
}

ScaleOutProfile load_scaleout_profile(const std::string& file) {
  const nlohmann::json doc = JsonReader::parse_file(file);
  JsonReader r(doc, file, "");
  ScaleOutProfile s;
  s.file = file;
  s.name = r.string("name");
  r.string("source");
  s.nics_per_leaf = positive_count(r, "nics_per_leaf");
  s.spines = positive_count(r, "spines");
  s.port_bytes_per_s = r.sourced("port_bytes_per_s", NumberRule::positive);
  s.oversubscription = r.sourced("oversubscription");
  if (s.oversubscription < 1) r.fail("oversubscription", "expected a ratio of at least 1");
  s.leaf_latency = r.sourced_ns("leaf_latency_ns");
  s.spine_latency = r.sourced_ns("spine_latency_ns");
  r.finish();
  return s;
}

ClusterSpec make_cluster(const std::string& node_profile, int units, const std::string& scale_out,
                         const std::string& profile_dir) {
  ClusterSpec c;
  c.node = load_node_profile(resolve(profile_dir, node_profile));
  c.units = units;
  c.scale_out = load_scaleout_profile(resolve(profile_dir, scale_out));
  return c;
}

ClusterSpec load_cluster(const std::string& file, const std::string& profile_dir) {
  const nlohmann::json doc = JsonReader::parse_file(file);
  JsonReader r(doc, file, "");
  const std::string node = r.string("node_profile");
  const int units = positive_count(r, "units");
  const std::string scale_out = r.string("scale_out");
  r.finish();
  ClusterSpec c = make_cluster(node, units, scale_out, profile_dir);
  c.file = file;
  return c;
}

}  // namespace nvl::fabric
