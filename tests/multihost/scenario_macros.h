// The start of every multi-host test case: make the scenario, or skip loudly when the bed cannot
// be built here (no root, no `ip`). CTest sees the printed marker (SKIP_REGULAR_EXPRESSION) and
// reports the test as skipped, never passed; tools/check.sh fails on a skip when CI=true.
#pragma once

#include <catch2/catch.hpp>
#include <cstdio>

#include "multihost/scenario.h"

#define MULTIHOST_SCENARIO(var, name, hosts, ...)                                     \
  auto var##_made =                                                                   \
      ::shardkv::multihost::Scenario::Create(name, hosts __VA_OPT__(, ) __VA_ARGS__); \
  if (!var##_made.ok()) {                                                             \
    std::printf("MULTIHOST SKIPPED: %s\n", var##_made.status().ToString().c_str());   \
    std::fflush(stdout);                                                              \
    WARN("MULTIHOST SKIPPED: " << var##_made.status().ToString());                    \
    return;                                                                           \
  }                                                                                   \
  ::shardkv::multihost::Scenario& var = **var##_made
