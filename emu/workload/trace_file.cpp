#include "emu/workload/trace_file.h"

#include <fstream>
#include <sstream>

#include "emu/rt/errors.h"

namespace nvl::emu {

std::string read_trace_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw rt::InputError(path.string(), "", "cannot open the trace file");
  std::ostringstream buf;
  buf << in.rdbuf();
  std::string text = buf.str();
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw rt::InputError(path.string(), "", "the trace file is empty");
  }
  return text;
}

}  // namespace nvl::emu
