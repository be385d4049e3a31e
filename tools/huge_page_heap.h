#pragma once
// The emulator's heap on transparent huge pages. A default run holds a few hundred MB of small objects
// (72 GPUs' streams, graph layouts, collective calls, KV pools) that the event loop visits in a different
// order at every step, and TLB misses are a good part of its time: backing glibc's heap with huge pages
// made the default scenario run 4-10% faster. glibc does that when its tunable glibc.malloc.hugetlb=1 is
// set (the kernel's transparent huge pages in madvise mode, Debian 12's default), but it reads tunables
// only when a process starts, so the process starts itself again, once, with the tunable added.
//
// To run without it (e.g. under valgrind, which does not follow the restart unless told to with
// --trace-children=yes), set GLIBC_TUNABLES=glibc.malloc.hugetlb=0.
namespace nvl::tools {

// Returns at once when GLIBC_TUNABLES already names glibc.malloc.hugetlb (set by the user, or this is the
// restarted process). Otherwise replaces the process with itself and the tunable added; if that fails
// it returns and the run goes on as it is, only slower.
void restart_with_huge_page_heap(char** argv);

}  // namespace nvl::tools
