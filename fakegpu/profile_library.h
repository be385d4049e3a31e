#pragma once
// Finding profiles by name in a profile directory: "<dir>/<name>.json". The default directory is an
// installed binary's share/nvl72emu/fakegpu/profiles, else this source tree's fakegpu/profiles (set at
// build time by NVL_FAKEGPU_PROFILE_DIR; rt::data_dir); every loader takes another directory where a
// scenario names one.
#include <filesystem>
#include <string>
#include <string_view>

#include "fakegpu/device_profile.h"
#include "fakegpu/host_profile.h"

namespace nvl::fakegpu {

std::filesystem::path default_profile_dir();

// The device profiles in `dir`, comma-separated and sorted ("none" when there are none).
std::string device_profile_names(const std::filesystem::path& dir = default_profile_dir());
// `name` as the file is named: "b300", "gb300", "b200", "gb200", "h100", "h200", "h800".
// An unknown name is an InputError listing the device profiles in the directory.
DeviceProfile load_device_profile_named(std::string_view name, const std::filesystem::path& dir = default_profile_dir());
// The host profile the device profile names ("grace", "hgx_host").
HostProfile load_host_profile_for(const DeviceProfile& device, const std::filesystem::path& dir = default_profile_dir());

}  // namespace nvl::fakegpu
