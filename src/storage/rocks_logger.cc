// RocksDB's info log, routed into the node's spdlog log instead of a LOG file in the database
// directory. The LOG file was what killed a node on a full disk: RocksDB's logger writes to it
// while handling the ENOSPC of a write, and a second write to a file that has already failed
// trips an assertion in the linked RocksDB (findings rows 8 and 9: "Assertion
// 'sync_without_flush_called_' failed"). Logging through spdlog (stderr) needs no disk space.
#include <spdlog/spdlog.h>

#include <cstdarg>
#include <cstdio>

#include "storage/storage_rep.h"

namespace shardkv::storage {
namespace {

class SpdlogRocksLogger : public rocksdb::Logger {
 public:
  // RocksDB formats every message at or above its level before calling Logv, so keep it at WARN
  // unless someone asked to see debug output.
  SpdlogRocksLogger()
      : rocksdb::Logger(spdlog::should_log(spdlog::level::debug)
                            ? rocksdb::InfoLogLevel::INFO_LEVEL
                            : rocksdb::InfoLogLevel::WARN_LEVEL) {}

  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    Logv(rocksdb::InfoLogLevel::INFO_LEVEL, format, ap);
  }
  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    if (level < GetInfoLogLevel()) return;
    char buffer[1024];
    va_list copy;
    va_copy(copy, ap);
    std::vsnprintf(buffer, sizeof(buffer), format, copy);
    va_end(copy);
    // Only a fatal RocksDB error reaches the normal log: RocksDB's own warnings and errors
    // repeat per failed write (a full disk), and shardkv logs what matters itself, once.
    const auto ours =
        level >= rocksdb::InfoLogLevel::FATAL_LEVEL ? spdlog::level::err : spdlog::level::debug;
    spdlog::log(ours, "rocksdb: {}", buffer);
  }
};

}  // namespace

std::shared_ptr<rocksdb::Logger> NewRocksLogger() { return std::make_shared<SpdlogRocksLogger>(); }

}  // namespace shardkv::storage
