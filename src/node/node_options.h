// Parsing shared by ValidateNodeOptions and Node::Start (private to src/node).
#pragma once

#include <cstdint>
#include <string>

#include "shardkv/options.h"
#include "shardkv/status.h"

namespace shardkv::node {

// Splits "host:port"; the host may be empty (meaning 127.0.0.1) or a bracketed IPv6 address.
// InvalidArgument naming `what` (e.g. "--listen") if it is not host:port with a port 0-65535.
Status ParseHostPort(const std::string& address, const std::string& what, std::string* host,
                     uint16_t* port);

// True for "localhost", 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104. Any other host, names
// included (they may resolve anywhere), counts as reachable from other hosts.
bool IsLoopbackHost(const std::string& host);

// Protected mode: a listener on a non-loopback `host` needs a secret (options.auth_secret_file)
// or options.insecure. `listener` names the flag in the error ("--listen"). The same rule covers
// every listener a node has: a new one (RESP, metrics) calls this with its own flag and host.
Status CheckListenerProtected(const std::string& listener, const std::string& host,
                              const NodeOptions& options);

}  // namespace shardkv::node
