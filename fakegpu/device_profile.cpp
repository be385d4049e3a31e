#include "fakegpu/device_profile.h"

#include <cmath>

#include "emu/rt/errors.h"
#include "fakegpu/json_reader.h"

namespace nvl::fakegpu {

namespace {
rt::Duration ns_of(double v) { return rt::Duration::nanoseconds(std::llround(v)); }
}  // namespace

DeviceProfile load_device_profile(const std::filesystem::path& file) {
  const JsonReader r(file);
  const auto& root = r.root();
  r.expect_keys(root, "",
                {"name", "architecture", "sm_count", "hbm_bytes", "hbm_usable_bytes", "hbm_bytes_per_s",
                 "peak_flops_per_s", "host", "host_link", "default_peer_bytes_per_s", "kernel_launch_ns",
                 "graph_launch_ns", "graph_node_ns"});
  DeviceProfile p;
  p.name = r.string(root, "", "name");
  p.architecture = r.string(root, "", "architecture");
  p.sm_count = static_cast<int>(r.sourced(root, "", "sm_count", NumberRule::positive_integer));
  p.hbm_bytes = static_cast<std::uint64_t>(r.sourced(root, "", "hbm_bytes", NumberRule::positive));
  p.hbm_usable_bytes = static_cast<std::uint64_t>(r.sourced(root, "", "hbm_usable_bytes", NumberRule::positive));
  if (p.hbm_usable_bytes > p.hbm_bytes) r.fail("hbm_usable_bytes.value", "expected at most hbm_bytes");
  p.hbm_bytes_per_s = r.sourced(root, "", "hbm_bytes_per_s", NumberRule::positive);

  const auto& peaks = root.at("peak_flops_per_s");
  r.expect_keys(peaks, "peak_flops_per_s", {"fp8", "bf16"}, {"fp4", "fp16", "fp32", "int8"});
  for (const auto& [dtype, v] : peaks.items()) {
    p.peak_flops_per_s[static_cast<std::size_t>(hal::dtype_from_string(dtype))] =
        r.sourced(peaks, "peak_flops_per_s", dtype, NumberRule::positive);
  }

  const auto& host = root.at("host");
  r.expect_keys(host, "host", {"profile", "gpus_per_host"});
  p.host_profile = r.string(host, "host", "profile");
  p.gpus_per_host = static_cast<int>(r.sourced(host, "host", "gpus_per_host", NumberRule::positive_integer));

  const auto& link = root.at("host_link");
  r.expect_keys(link, "host_link", {"kind", "bytes_per_s"});
  const std::string kind = r.string(link, "host_link", "kind");
  if (kind == "nvlink_c2c") {
    p.host_link = HostLinkKind::nvlink_c2c;
  } else if (kind == "pcie") {
    p.host_link = HostLinkKind::pcie;
  } else {
    r.fail("host_link.kind", "expected \"nvlink_c2c\" or \"pcie\", found \"" + kind + "\"");
  }
  p.host_link_bytes_per_s = r.sourced(link, "host_link", "bytes_per_s", NumberRule::positive);
  p.default_peer_bytes_per_s = r.sourced(root, "", "default_peer_bytes_per_s", NumberRule::positive);
  p.kernel_launch = ns_of(r.sourced(root, "", "kernel_launch_ns", NumberRule::non_negative));
  p.graph_launch = ns_of(r.sourced(root, "", "graph_launch_ns", NumberRule::non_negative));
  p.graph_node = ns_of(r.sourced(root, "", "graph_node_ns", NumberRule::non_negative));

  const auto table = file.parent_path() / ("efficiency_" + p.architecture + ".json");
  if (!std::filesystem::exists(table)) {
    r.fail("architecture", "no efficiency table " + table.string() + " for architecture \"" + p.architecture + "\"");
  }
  p.efficiency = load_efficiency_table(table);
  if (p.efficiency.architecture != p.architecture) {
    throw rt::InputError(table.string(), "architecture",
                         "expected \"" + p.architecture + "\" (the file name's), found \"" +
                             p.efficiency.architecture + "\"");
  }
  return p;
}

}  // namespace nvl::fakegpu
