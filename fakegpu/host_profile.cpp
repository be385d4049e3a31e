#include "fakegpu/host_profile.h"

#include "fakegpu/json_reader.h"

namespace nvl::fakegpu {

HostProfile load_host_profile(const std::filesystem::path& file) {
  const JsonReader r(file);
  const auto& root = r.root();
  if (!root.is_object()) r.fail("", std::string("expected an object, found ") + root.type_name());
  HostProfile p;
  const std::string kind = root.contains("kind") && root.at("kind").is_string() ? root.at("kind").get<std::string>() : "";
  if (kind == "grace") {
    r.expect_keys(root, "", {"name", "kind", "memory_bytes", "memory_bytes_per_s", "c2c_bytes_per_s"});
    p.kind = HostKind::grace;
    p.c2c_bytes_per_s = r.sourced(root, "", "c2c_bytes_per_s", NumberRule::positive);
  } else if (kind == "x86") {
    r.expect_keys(root, "", {"name", "kind", "memory_bytes", "memory_bytes_per_s"});
    p.kind = HostKind::x86;
  } else {
    r.expect_keys(root, "", {"kind"}, {"name", "memory_bytes", "memory_bytes_per_s", "c2c_bytes_per_s"});
    r.fail("kind", "expected \"grace\" or \"x86\", found " + root.at("kind").dump());
  }
  p.name = r.string(root, "", "name");
  p.memory_bytes = static_cast<std::uint64_t>(r.sourced(root, "", "memory_bytes", NumberRule::positive));
  p.memory_bytes_per_s = r.sourced(root, "", "memory_bytes_per_s", NumberRule::positive);
  return p;
}

}  // namespace nvl::fakegpu
