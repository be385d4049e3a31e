#include "fakegpu/profile_library.h"

#include <algorithm>
#include <string>
#include <vector>

#include "emu/rt/data_dir.h"
#include "emu/rt/errors.h"

namespace nvl::fakegpu {

std::filesystem::path default_profile_dir() { return rt::data_dir("fakegpu/profiles", NVL_FAKEGPU_PROFILE_DIR); }

// Device profiles are the files that are neither an efficiency table nor a host.
std::string device_profile_names(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string stem = e.path().stem().string();
    if (e.path().extension() != ".json" || stem.rfind("efficiency_", 0) == 0 || stem == "grace" || stem == "hgx_host") {
      continue;
    }
    names.push_back(stem);
  }
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

DeviceProfile load_device_profile_named(std::string_view name, const std::filesystem::path& dir) {
  const auto file = dir / (std::string(name) + ".json");
  if (!std::filesystem::exists(file)) {
    throw rt::InputError(dir.string(), std::string(name),
                         "no such device profile (expected one of: " + device_profile_names(dir) + ")");
  }
  return load_device_profile(file);
}

HostProfile load_host_profile_for(const DeviceProfile& device, const std::filesystem::path& dir) {
  const auto file = dir / (device.host_profile + ".json");
  if (!std::filesystem::exists(file)) {
    throw rt::InputError(dir.string(), "host.profile",
                         "device profile " + device.name + " names host profile \"" + device.host_profile +
                             "\", which has no file here");
  }
  return load_host_profile(file);
}

}  // namespace nvl::fakegpu
