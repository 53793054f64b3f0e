// Hardening cases (issue 9), area: rebal. Multi-process: real shardkv-node processes driven through
// the shardkv CLI (integration/cli_harness.h).
#include <catch2/catch.hpp>

#include "integration/cli_harness.h"
