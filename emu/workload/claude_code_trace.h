#pragma once
// kv-cache-tester (Claude Code) JSON: one conversation a file, with nested sub-agents
// (callanjfox/kv-cache-tester, see ../shared/traces/claude-code/trace_replay_tester.md).
// - Each request becomes a closed-loop turn: think_time is the client gap before it (falling back to the
//   recorded gap of `t` when absent); `api_time` was the original server's time and is not replayed.
// - hash_ids are 64-token blocks (full blocks only: a prompt's partial tail has no id).
// - Namespaces: `hash_id_scope: local` ids are local to the file, so each file is its own namespace.
//   In the files at hand, sub-agents continue the file's numbering (and sub-agents share the ids of their
//   common system prompt), so they stay in the file's namespace; a sub-agent whose ids restart at 1, as
//   the format's README describes, gets a namespace of its own. `global` ids share one namespace across
//   all files loaded together.
// - A sub-agent is a session spawned after the parent requests that precede its entry, `t` apart; the
//   parent does not wait for it (in the recordings the parent keeps going while sub-agents run).
#include <filesystem>

#include "emu/workload/load_options.h"
#include "emu/workload/workload.h"

namespace nvl::emu {

// PATH is one .json file or a folder of them (read in name order).
Workload load_claude_code_trace(const std::filesystem::path& path, const LoadOptions& options = {});

}  // namespace nvl::emu
