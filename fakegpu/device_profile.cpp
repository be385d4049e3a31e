#include "fakegpu/device_profile.h"

#include <cmath>

#include "emu/rt/errors.h"
#include "emu/rt/json_reader.h"

namespace nvl::fakegpu {

namespace {
using rt::NumberRule;
rt::Duration ns_of(double v) { return rt::Duration::nanoseconds(std::llround(v)); }
}  // namespace

DeviceProfile load_device_profile(const std::filesystem::path& file) {
  const nlohmann::json root = rt::JsonReader::parse_file(file);
  rt::JsonReader r(root, file.string());
  DeviceProfile p;
  p.name = r.string("name");
  p.architecture = r.string("architecture");
  p.sm_count = static_cast<int>(r.sourced("sm_count", NumberRule::positive_whole));
  p.hbm_bytes = static_cast<std::uint64_t>(r.sourced("hbm_bytes", NumberRule::positive));
  p.hbm_usable_bytes = static_cast<std::uint64_t>(r.sourced("hbm_usable_bytes", NumberRule::positive));
  if (p.hbm_usable_bytes > p.hbm_bytes) r.fail("hbm_usable_bytes.value", "expected at most hbm_bytes");
  p.hbm_bytes_per_s = r.sourced("hbm_bytes_per_s", NumberRule::positive);

  rt::JsonReader peaks = r.object("peak_flops_per_s");
  for (const char* dtype : {"fp4", "fp8", "bf16", "fp16", "fp32", "int8"}) {
    const bool required = std::string_view(dtype) == "fp8" || std::string_view(dtype) == "bf16";
    if (!required && !peaks.has(dtype)) continue;
    p.peak_flops_per_s[static_cast<std::size_t>(hal::dtype_from_string(dtype))] =
        peaks.sourced(dtype, NumberRule::positive);
  }
  peaks.finish();

  rt::JsonReader host = r.object("host");
  p.host_profile = host.string("profile");
  p.gpus_per_host = static_cast<int>(host.sourced("gpus_per_host", NumberRule::positive_whole));
  host.finish();

  rt::JsonReader link = r.object("host_link");
  const std::string kind = link.string("kind");
  if (kind == "nvlink_c2c") {
    p.host_link = HostLinkKind::nvlink_c2c;
  } else if (kind == "pcie") {
    p.host_link = HostLinkKind::pcie;
  } else {
    link.fail("kind", "expected \"nvlink_c2c\" or \"pcie\", found \"" + kind + "\"");
  }
  p.host_link_bytes_per_s = link.sourced("bytes_per_s", NumberRule::positive);
  link.finish();
  p.default_peer_bytes_per_s = r.sourced("default_peer_bytes_per_s", NumberRule::positive);
  p.kernel_launch = ns_of(r.sourced("kernel_launch_ns"));
  p.graph_launch = ns_of(r.sourced("graph_launch_ns"));
  p.graph_node = ns_of(r.sourced("graph_node_ns"));
  p.throttle_memory_coupling = r.sourced("throttle_memory_coupling", NumberRule::fraction);
  if (r.has("measured_kernels")) {
    rt::JsonReader libraries = r.object("measured_kernels");
    for (const std::string& library : libraries.keys()) {
      rt::JsonReader tables = libraries.object(library);
      MeasuredKernelFiles& files = p.measured_kernels[library];
      for (auto [key, path] : {std::pair{"gemm", &files.gemm}, std::pair{"mla_decode", &files.mla_decode},
                               std::pair{"dsa_decode", &files.dsa_decode},
                               std::pair{"dsa_context", &files.dsa_context},
                               std::pair{"mla_context", &files.mla_context},
                               std::pair{"mla_decode_module", &files.mla_decode_module}, std::pair{"moe", &files.moe},
                               std::pair{"moe_deepep_ll", &files.moe_deepep_low_latency},
                               std::pair{"moe_deepep_normal", &files.moe_deepep_normal}}) {
        if (!tables.has(key)) continue;
        *path = file.parent_path() / tables.string(key);
        if (!std::filesystem::exists(*path)) tables.fail(key, "no file " + path->string());
      }
      tables.finish();
    }
    libraries.finish();
  }
  r.finish();

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

std::string DeviceProfile::kernel_libraries() const {
  std::string names = "roofline";
  for (const auto& [library, files] : measured_kernels) names += ", " + library;
  return names;
}

}  // namespace nvl::fakegpu
