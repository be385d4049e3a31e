#pragma once
// How a run prices the fabric (scenario key run.fabric_mode).
namespace nvl::emu {

// fast: collectives on idle links priced offline and repeated layers fast-forwarded, their traffic held
// on the links and shared with flows that meet it. exact: every collective of every layer of every step
// runs as flows in the max-min flow model; the reference the fast mode is checked against.
enum class FabricMode { fast, exact };

}  // namespace nvl::emu
