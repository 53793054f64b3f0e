// libraft's C header, with C linkage: Debian's raft.h (0.15) has no extern "C" guard of its own.
#pragma once

extern "C" {
#include <raft.h>
}
