// Large values through glibc malloc on transparent huge pages.
//
// Touching fresh 4 KiB pages is what a 16 MiB value costs most: about 70 ms per 16 MiB on the
// VMs this project is measured on, several times per put (read buffer, decoded request, record,
// replica copies), against under 2 ms on huge pages. glibc (2.35 and later) can ask for huge
// pages for its heap and its mapped blocks, but only through the GLIBC_TUNABLES environment
// variable read at process start, so a binary that wants it re-executes itself once with the
// tunable set. exec keeps the process id, so pid files, supervisors and `kill` see one process.
//
// Without transparent huge pages in "madvise" or "always" mode the tunable does nothing, and an
// older glibc ignores it. SHARDKV_HUGEPAGE_MALLOC=0 turns the re-exec off (profiling under
// valgrind, which would not follow it).
#pragma once

namespace shardkv::process {

// Call first in main(). Returns only if no re-exec was needed or exec failed (then the process
// simply runs with the default allocator settings).
void ReexecWithHugePageMalloc(char** argv);

}  // namespace shardkv::process
