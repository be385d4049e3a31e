#include "fakegpu/host_profile.h"

#include "emu/rt/json_reader.h"

namespace nvl::fakegpu {

HostProfile load_host_profile(const std::filesystem::path& file) {
  const nlohmann::json root = rt::JsonReader::parse_file(file);
  rt::JsonReader r(root, file.string());
  HostProfile p;
  const std::string kind = r.string("kind");
  if (kind == "grace") {
    p.kind = HostKind::grace;
    p.c2c_bytes_per_s = r.sourced("c2c_bytes_per_s", rt::NumberRule::positive);
  } else if (kind == "x86") {
    p.kind = HostKind::x86;
  } else {
    r.fail("kind", "expected \"grace\" or \"x86\", found \"" + kind + "\"");
  }
  p.name = r.string("name");
  p.memory_bytes = static_cast<std::uint64_t>(r.sourced("memory_bytes", rt::NumberRule::positive));
  p.memory_bytes_per_s = r.sourced("memory_bytes_per_s", rt::NumberRule::positive);
  r.finish();
  return p;
}

}  // namespace nvl::fakegpu
