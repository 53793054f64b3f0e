// Parsing shared by ValidateNodeOptions and Node::Start (private to src/node).
#pragma once

#include <cstdint>
#include <string>

#include "shardkv/status.h"

namespace shardkv::node {

// Splits "host:port"; the host may be empty (meaning 127.0.0.1) or a bracketed IPv6 address.
// InvalidArgument naming `what` (e.g. "--listen") if it is not host:port with a port 0-65535.
Status ParseHostPort(const std::string& address, const std::string& what, std::string* host,
                     uint16_t* port);

}  // namespace shardkv::node
