// The file system a Storage opened with StorageOptions::fault_injection_for_test uses: RocksDB's
// own, with every write-side operation asking the test's hook first. Tests fail writes on demand
// with it (a read-only or failing disk) and clear the failure, all in process.
#include <rocksdb/file_system.h>

#include <memory>
#include <string>
#include <utility>

#include "storage/storage_rep.h"

namespace shardkv::storage {
namespace {

using Hook = std::function<Status(const std::string& file)>;

// The hook's refusal as RocksDB's I/O status: ResourceExhausted is a full disk, anything else
// a plain I/O error.
rocksdb::IOStatus Ask(const Hook& hook, const std::string& file) {
  const Status s = hook(file);
  if (s.ok()) return rocksdb::IOStatus::OK();
  if (s.code() == Status::Code::kResourceExhausted) {
    return rocksdb::IOStatus::NoSpace(file, s.message());
  }
  return rocksdb::IOStatus::IOError(file, s.message());
}

class FaultFile : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  FaultFile(std::unique_ptr<rocksdb::FSWritableFile> file, std::string name, Hook hook)
      : FSWritableFileOwnerWrapper(std::move(file)),
        name_(std::move(name)),
        hook_(std::move(hook)) {}

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           rocksdb::IODebugContext* dbg) override {
    if (auto s = Ask(hook_, name_); !s.ok()) return s;
    return FSWritableFileOwnerWrapper::Append(data, options, dbg);
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           const rocksdb::DataVerificationInfo& info,
                           rocksdb::IODebugContext* dbg) override {
    if (auto s = Ask(hook_, name_); !s.ok()) return s;
    return FSWritableFileOwnerWrapper::Append(data, options, info, dbg);
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                     const rocksdb::IOOptions& options,
                                     rocksdb::IODebugContext* dbg) override {
    if (auto s = Ask(hook_, name_); !s.ok()) return s;
    return FSWritableFileOwnerWrapper::PositionedAppend(data, offset, options, dbg);
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                     const rocksdb::IOOptions& options,
                                     const rocksdb::DataVerificationInfo& info,
                                     rocksdb::IODebugContext* dbg) override {
    if (auto s = Ask(hook_, name_); !s.ok()) return s;
    return FSWritableFileOwnerWrapper::PositionedAppend(data, offset, options, info, dbg);
  }
  rocksdb::IOStatus Flush(const rocksdb::IOOptions& options,
                          rocksdb::IODebugContext* dbg) override {
    if (auto s = Ask(hook_, name_); !s.ok()) return s;
    return FSWritableFileOwnerWrapper::Flush(options, dbg);
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& options, rocksdb::IODebugContext* dbg) override {
    if (auto s = Ask(hook_, name_); !s.ok()) return s;
    return FSWritableFileOwnerWrapper::Sync(options, dbg);
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& options,
                          rocksdb::IODebugContext* dbg) override {
    if (auto s = Ask(hook_, name_); !s.ok()) return s;
    return FSWritableFileOwnerWrapper::Fsync(options, dbg);
  }
  rocksdb::IOStatus RangeSync(uint64_t offset, uint64_t nbytes, const rocksdb::IOOptions& options,
                              rocksdb::IODebugContext* dbg) override {
    if (auto s = Ask(hook_, name_); !s.ok()) return s;
    return FSWritableFileOwnerWrapper::RangeSync(offset, nbytes, options, dbg);
  }

 private:
  const std::string name_;
  const Hook hook_;
};

class FaultFileSystem : public rocksdb::FileSystemWrapper {
 public:
  FaultFileSystem(const std::shared_ptr<rocksdb::FileSystem>& base, Hook hook)
      : FileSystemWrapper(base), hook_(std::move(hook)) {}
  const char* Name() const override { return "ShardkvFaultFileSystem"; }

  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override {
    if (auto s = Ask(hook_, name); !s.ok()) return s;
    std::unique_ptr<rocksdb::FSWritableFile> file;
    rocksdb::IOStatus s = target()->NewWritableFile(name, options, &file, dbg);
    if (s.ok()) *result = std::make_unique<FaultFile>(std::move(file), name, hook_);
    return s;
  }
  rocksdb::IOStatus ReopenWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                       std::unique_ptr<rocksdb::FSWritableFile>* result,
                                       rocksdb::IODebugContext* dbg) override {
    if (auto s = Ask(hook_, name); !s.ok()) return s;
    std::unique_ptr<rocksdb::FSWritableFile> file;
    rocksdb::IOStatus s = target()->ReopenWritableFile(name, options, &file, dbg);
    if (s.ok()) *result = std::make_unique<FaultFile>(std::move(file), name, hook_);
    return s;
  }
  rocksdb::IOStatus ReuseWritableFile(const std::string& name, const std::string& old_name,
                                      const rocksdb::FileOptions& options,
                                      std::unique_ptr<rocksdb::FSWritableFile>* result,
                                      rocksdb::IODebugContext* dbg) override {
    if (auto s = Ask(hook_, name); !s.ok()) return s;
    std::unique_ptr<rocksdb::FSWritableFile> file;
    rocksdb::IOStatus s = target()->ReuseWritableFile(name, old_name, options, &file, dbg);
    if (s.ok()) *result = std::make_unique<FaultFile>(std::move(file), name, hook_);
    return s;
  }
  rocksdb::IOStatus RenameFile(const std::string& from, const std::string& to,
                               const rocksdb::IOOptions& options,
                               rocksdb::IODebugContext* dbg) override {
    if (auto s = Ask(hook_, to); !s.ok()) return s;
    return target()->RenameFile(from, to, options, dbg);
  }
  rocksdb::IOStatus DeleteFile(const std::string& name, const rocksdb::IOOptions& options,
                               rocksdb::IODebugContext* dbg) override {
    if (auto s = Ask(hook_, name); !s.ok()) return s;
    return target()->DeleteFile(name, options, dbg);
  }

 private:
  const Hook hook_;
};

}  // namespace

std::shared_ptr<rocksdb::FileSystem> NewFaultInjectingFileSystem(
    std::shared_ptr<rocksdb::FileSystem> base,
    std::function<Status(const std::string& file)> hook) {
  return std::make_shared<FaultFileSystem>(base, std::move(hook));
}

}  // namespace shardkv::storage
