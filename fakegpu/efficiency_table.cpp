#include "fakegpu/efficiency_table.h"

#include "emu/rt/json_reader.h"

namespace nvl::fakegpu {

namespace {

using rt::NumberRule;

KindEfficiency read_kind(rt::JsonReader r) {
  KindEfficiency k;
  rt::JsonReader c = r.object("compute_efficiency");
  k.compute_efficiency.fill(c.sourced("default", NumberRule::fraction));
  for (const char* dtype : {"fp4", "fp8", "bf16", "fp16", "fp32", "int8"}) {
    if (c.has(dtype)) {
      k.compute_efficiency[static_cast<std::size_t>(hal::dtype_from_string(dtype))] =
          c.sourced(dtype, NumberRule::fraction);
    }
  }
  c.finish();
  k.compute_half_flops = r.sourced("compute_half_flops");
  k.memory_efficiency = r.sourced("memory_efficiency", NumberRule::fraction);
  k.memory_half_bytes = r.sourced("memory_half_bytes");
  r.finish();
  return k;
}

}  // namespace

EfficiencyTable load_efficiency_table(const std::filesystem::path& file) {
  const nlohmann::json root = rt::JsonReader::parse_file(file);
  rt::JsonReader r(root, file.string());
  EfficiencyTable t;
  t.architecture = r.string("architecture");
  rt::JsonReader kernels = r.object("kernels");
  for (const std::string& name : kernels.keys()) {
    try {
      hal::kernel_kind_from_string(name);
    } catch (const std::invalid_argument& e) {
      kernels.fail(name, e.what());
    }
  }
  // Every kernel kind needs an entry.
  for (int i = 0; i < hal::kKernelKindCount; ++i) {
    const auto kind = static_cast<hal::KernelKind>(i);
    t.kinds[static_cast<std::size_t>(i)] = read_kind(kernels.object(hal::to_string(kind)));
  }
  kernels.finish();
  r.finish();
  return t;
}

}  // namespace nvl::fakegpu
