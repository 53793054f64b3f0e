// KvService: the node's request handler for client operations (get/put/delete, batches, stats,
// cluster map). Each request is validated (cluster id, key and value limits), placed by the
// node's current map, and applied to local storage with the node's HLC.
//
// Requests run inline on the server's I/O thread: a cached RocksDB read or an unsynced WAL write
// takes microseconds, far less than handing the request to another thread would cost.
//
// Thread-safety: Handle() may run concurrently on every I/O thread.
#pragma once

#include <cstddef>
#include <functional>

#include "cluster/map_store.h"
#include "net/server.h"
#include "node/node_stats.h"
#include "storage/storage.h"

namespace shardkv {

struct KvServiceLimits {
  size_t max_key_bytes = size_t{64} << 10;
  size_t max_value_bytes = size_t{16} << 20;
};

class KvService : public net::RequestHandler {
 public:
  // REQUIRES: all pointers outlive the service. `server_stats` may be null (tests).
  KvService(Storage* storage, MapStore* maps, NodeStats* stats, KvServiceLimits limits,
            std::function<net::Server::Stats()> server_stats)
      : storage_(storage),
        maps_(maps),
        stats_(stats),
        limits_(limits),
        server_stats_(std::move(server_stats)) {}

  void Handle(net::Request request, std::function<void(net::Response)> done) override;

  // Serves one request synchronously (Handle() minus the callback and the bookkeeping).
  net::Response Serve(const net::Request& request);

 private:
  Status CheckKey(std::string_view key) const;
  Status CheckValue(std::string_view value) const;
  net::ResponseBody Get(const ClusterMap& map, const net::GetRequest& r);
  net::ResponseBody Put(const ClusterMap& map, const net::PutRequest& r);
  net::ResponseBody Delete(const ClusterMap& map, const net::DeleteRequest& r);
  net::ResponseBody MultiGet(const ClusterMap& map, const net::MultiGetRequest& r);
  net::ResponseBody MultiPut(const ClusterMap& map, const net::MultiPutRequest& r);
  net::ResponseBody Stats();

  Storage* storage_;
  MapStore* maps_;
  NodeStats* stats_;
  KvServiceLimits limits_;
  std::function<net::Server::Stats()> server_stats_;
};

}  // namespace shardkv
