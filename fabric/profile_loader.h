#pragma once
// Loads node/rack profiles, scale-out network profiles and cluster descriptions from JSON. Every problem
// (unknown or missing key, wrong type, negative number) is an rt::InputError naming file and key path.
#include <string>
#include <vector>

#include "fabric/profile.h"

namespace nvl::fabric {

// $NVL_FABRIC_PROFILE_DIR when set, else an installed binary's share/nvl72emu/fabric/profiles, else
// fabric/profiles in the source tree (set at build time; rt::data_dir).
std::string default_profile_dir();

// The node profiles in profile_dir (default_profile_dir() when empty), by name, sorted: the files that
// describe trays (scale-out profiles and clusters are left out).
std::vector<std::string> node_profile_names(const std::string& profile_dir = "");

NodeProfile load_node_profile(const std::string& file);
ScaleOutProfile load_scaleout_profile(const std::string& file);
// {"node_profile": name, "units": n, "scale_out": name}; names are files <dir>/<name>.json, where dir is
// profile_dir (default_profile_dir() when empty).
ClusterSpec load_cluster(const std::string& file, const std::string& profile_dir = "");
// The same from names, without a cluster file.
ClusterSpec make_cluster(const std::string& node_profile, int units, const std::string& scale_out = "leaf-spine",
                         const std::string& profile_dir = "");

}  // namespace nvl::fabric
