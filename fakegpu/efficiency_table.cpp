#include "fakegpu/efficiency_table.h"

#include "fakegpu/json_reader.h"

namespace nvl::fakegpu {

namespace {
KindEfficiency read_kind(const JsonReader& r, const nlohmann::json& j, const std::string& path) {
  r.expect_keys(j, path, {"compute_efficiency", "compute_half_flops", "memory_efficiency", "memory_half_bytes"});
  KindEfficiency k;
  const std::string cpath = key_path(path, "compute_efficiency");
  const auto& c = j.at("compute_efficiency");
  r.expect_keys(c, cpath, {"default"}, {"fp4", "fp8", "bf16", "fp16", "fp32", "int8"});
  k.compute_efficiency.fill(r.sourced(c, cpath, "default", NumberRule::fraction));
  for (const auto& [name, v] : c.items()) {
    if (name == "default") continue;
    k.compute_efficiency[static_cast<std::size_t>(hal::dtype_from_string(name))] =
        r.sourced(c, cpath, name, NumberRule::fraction);
  }
  k.compute_half_flops = r.sourced(j, path, "compute_half_flops", NumberRule::non_negative);
  k.memory_efficiency = r.sourced(j, path, "memory_efficiency", NumberRule::fraction);
  k.memory_half_bytes = r.sourced(j, path, "memory_half_bytes", NumberRule::non_negative);
  return k;
}
}  // namespace

EfficiencyTable load_efficiency_table(const std::filesystem::path& file) {
  const JsonReader r(file);
  const auto& root = r.root();
  r.expect_keys(root, "", {"architecture", "kernels"});
  EfficiencyTable t;
  t.architecture = r.string(root, "", "architecture");
  const auto& kernels = root.at("kernels");
  if (!kernels.is_object()) r.fail("kernels", std::string("expected an object, found ") + kernels.type_name());
  for (int i = 0; i < hal::kKernelKindCount; ++i) {
    const auto kind = static_cast<hal::KernelKind>(i);
    const std::string name(hal::to_string(kind));
    if (!kernels.contains(name)) r.fail(key_path("kernels", name), "missing key (every kernel kind needs an entry)");
  }
  for (const auto& [name, v] : kernels.items()) {
    hal::KernelKind kind;
    try {
      kind = hal::kernel_kind_from_string(name);
    } catch (const std::invalid_argument& e) {
      r.fail(key_path("kernels", name), e.what());
    }
    t.kinds[static_cast<std::size_t>(kind)] = read_kind(r, v, key_path("kernels", name));
  }
  return t;
}

}  // namespace nvl::fakegpu
