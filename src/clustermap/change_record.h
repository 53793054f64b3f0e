// The rebalancer's names for the public change records (include/shardkv/change.h), kept so that
// the node-side code reads as before; the records themselves have one definition, public.
#pragma once

#include "shardkv/change.h"

namespace shardkv::rebalance {

using ::shardkv::ChangeRecord;
using ::shardkv::ChangeState;
using ::shardkv::ChangeStateName;
using ::shardkv::NodeShare;
using ::shardkv::ParseChangeState;
using ::shardkv::StreamProgress;
using RebalanceReport = ::shardkv::ChangeReport;

}  // namespace shardkv::rebalance
