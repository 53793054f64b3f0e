// NextConfigurationStep: the one Raft membership change that brings the configuration a step
// closer to the one the map calls for (design.md "Consensus", "Voters"), or why none can be made
// now. A pure function: MapConsensus's leader loop calls it every tick and runs the step.
//
// Order: departed servers are removed, new members added (as standbys), voters that lose their
// vote demoted, then standbys promoted. So the voters never exceed the desired number, and a dead
// voter of a departed node goes before a new voter comes in. A step is taken only if the voters it
// leaves can decide it: a majority of the voters of the configuration it makes has been heard
// from within the lease (a promotion also needs its server heard), since a configuration that
// cannot commit blocks every change after it, and Raft cannot take it back. A server whose last
// change was given up is skipped while it backs off, so that it does not hold up the others.
//
// Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "consensus/raft_replica.h"

namespace shardkv::cluster {

struct ConfigurationStep {
  enum class Kind { kNone, kRemove, kAdd, kAssign, kHandOn };
  Kind kind = Kind::kNone;
  // kRemove: id. kAdd: id, address (added as a standby). kAssign: id and the new role.
  consensus::RaftServer server;
  std::string what;  // "removing server 1", for the log and the status
  // kNone while the configuration differs from the desired one: why no step can be taken now.
  std::string waiting;
};

struct ConfigurationView {
  uint64_t self_id = 0;
  std::vector<consensus::RaftServer> have;  // the configuration now
  std::vector<consensus::RaftServer> want;  // DesiredConfiguration of the applied map
  // Whether a server was heard from within the lease (this server: always).
  std::function<bool(uint64_t id)> heard;
  std::set<uint64_t> backing_off;  // servers whose last change was given up a short while ago
};

ConfigurationStep NextConfigurationStep(const ConfigurationView& view);

// "voter", "standby", "spare".
std::string RaftRoleName(consensus::RaftRole role);

}  // namespace shardkv::cluster
