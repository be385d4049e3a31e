#pragma once
// The emulator's heap, tuned for how it allocates. glibc reads its tunables only when a process starts,
// so the process starts itself again, once, with them added to GLIBC_TUNABLES:
//   - glibc.malloc.hugetlb=1: the heap on transparent huge pages (madvise mode, Debian 12's default). A
//     default run holds a few hundred MB of small objects (72 GPUs' streams, graph layouts, collective
//     calls, KV pools) that the event loop visits in a different order at every step, and TLB misses
//     are a good part of its time: this made the default scenario run 4-10% faster.
//   - glibc.malloc.tcache_count=1024: a step allocates and frees in bursts of one size per GPU (64 ranks'
//     collective parts, kernel lists, graph nodes), far more than the 7 blocks a size that glibc's
//     per-thread cache keeps by default; the rest went through the arenas' bins. With room for a step's
//     burst, the default scenario's first 1,000 s ran 6-14% faster, with a few MB less at peak.
//
// A tunable already named in GLIBC_TUNABLES is left as it is. To run without the restart (e.g. under
// valgrind, which does not follow it unless told to with --trace-children=yes), set
// GLIBC_TUNABLES=glibc.malloc.hugetlb=0 (or =1).
namespace nvl::tools {

// Returns at once when GLIBC_TUNABLES already names glibc.malloc.hugetlb (set by the user, or this is the
// restarted process). Otherwise replaces the process with itself and the tunables added; if that fails
// it returns and the run goes on as it is, only slower.
void restart_with_heap_tunables(char** argv);

}  // namespace nvl::tools
