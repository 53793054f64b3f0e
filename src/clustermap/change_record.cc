// Cap'n Proto encoding of the change record and report (change.capnp), and the names of the
// change enums. Decode reads the v0.1.0 key=value text too (change_record_legacy.h).
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <array>
#include <cstring>

#include "clustermap/change.capnp.h"
#include "clustermap/change_record_legacy.h"
#include "shardkv/change.h"

namespace shardkv {
namespace {

// The C++ enums are cast to and from the schema's: their ordinals must agree.
static_assert(static_cast<int>(changewire::ChangeKind::ADD) == static_cast<int>(ChangeKind::kAdd));
static_assert(static_cast<int>(changewire::ChangeKind::JOIN) ==
              static_cast<int>(ChangeKind::kJoin));
static_assert(static_cast<int>(changewire::ChangeKind::REMOVE) ==
              static_cast<int>(ChangeKind::kRemove));
static_assert(static_cast<int>(changewire::ChangeKind::PARAMS) ==
              static_cast<int>(ChangeKind::kParams));
static_assert(static_cast<int>(changewire::ChangeState::PLANNED) ==
              static_cast<int>(ChangeState::kPlanned));
static_assert(static_cast<int>(changewire::ChangeState::READ_NEW) ==
              static_cast<int>(ChangeState::kReadNew));
static_assert(static_cast<int>(changewire::ChangeState::CANCELLED) ==
              static_cast<int>(ChangeState::kCancelled));

constexpr std::array<std::string_view, 8> kStateNames = {
    "planned", "streaming", "read_new", "new_only", "cleanup", "done", "failed", "cancelled"};

// Bounds a decode (a record's task plans are its only list that grows; a million tasks fit). The
// map that carries a record is bounded by the same 64 MiB.
constexpr uint64_t kTraversalLimitWords = 64 * 1024 * 1024 / sizeof(capnp::word);
constexpr int kNestingLimit = 8;
// Elements per list at most (task plans, streams, shares: a plan has a few tasks per node pair).
// capnp charges a list of zero-sized structs one word per element, so without a cap a 100-byte
// message could claim millions of task plans, 40 bytes of memory each; the cap keeps what
// decodes re-encodable under the traversal limit.
constexpr size_t kMaxListElements = size_t{1} << 18;

std::string ToBytes(capnp::MessageBuilder& message) {
  kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  auto bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

std::string Str(capnp::Text::Reader t) { return std::string(t.cStr(), t.size()); }

Status CheckVersion(uint32_t version, uint32_t known, const std::string& what) {
  // Version 0 is the v0.1.0 text, never a capnp message: bytes that parse as a message without a
  // version are not a record.
  if (version == 0) return Status::Corruption(what + " without a format version");
  if (version > known) {
    return Status::NotSupported(what + " format version " + std::to_string(version) +
                                " is newer than this build reads (version " +
                                std::to_string(known) + "); upgrade this node");
  }
  return Status::OK();
}

// A list is refused when it claims more elements than the cap or than the message has words:
// every element this build writes takes at least a word.
Status CheckCount(size_t n, size_t message_words, const std::string& what) {
  if (n > kMaxListElements || n > message_words) {
    return Status::Corruption(what + ": a list of " + std::to_string(n) + " elements in a " +
                              std::to_string(message_words) + "-word message");
  }
  return Status::OK();
}

void WriteRecord(const ChangeRecord& r, changewire::ChangeRecord::Builder m) {
  // Version 1 unless the record needs 2 (a params change), so that a node of the previous release
  // keeps reading membership changes.
  m.setFormatVersion(r.kind == ChangeKind::kParams ? kChangeRecordFormatVersion : 1);
  m.setChangeId(r.change_id);
  m.setKind(static_cast<changewire::ChangeKind>(r.kind));
  m.setNodeId(r.node_id);
  m.setState(static_cast<changewire::ChangeState>(r.state));
  m.setError(r.error);
  m.setFromEpoch(r.from_epoch);
  m.setRateBytesPerS(r.rate_bytes_per_s);
  m.setStreamsPerNode(r.streams_per_node);
  m.setPlannedCopies(r.planned_copies);
  m.setPlannedTombstones(r.planned_tombstones);
  m.setPlannedBytes(r.planned_bytes);
  m.setPlannedRanges(r.planned_ranges);
  m.setPlannedTokenRanges(r.planned_token_ranges);
  m.setRemappedKeys(r.remapped_keys);
  m.setLiveKeys(r.live_keys);
  m.setTotalCopies(r.total_copies);
  m.setIdealFraction(r.ideal_fraction);
  m.setReplicasConfigured(r.replicas_configured);
  m.setReplicasAfter(r.replicas_after);
  m.setWriteQuorumAfter(r.write_quorum_after);
  m.setReadQuorumAfter(r.read_quorum_after);
  m.setReplicasBefore(r.replicas_before);
  m.setWriteQuorumBefore(r.write_quorum_before);
  m.setReadQuorumBefore(r.read_quorum_before);
  m.setParamsReplicas(r.params_replicas);
  m.setParamsWriteQuorum(r.params_write_quorum);
  m.setParamsReadQuorum(r.params_read_quorum);
  m.setMovedCopies(r.moved_copies);
  m.setMovedTombstones(r.moved_tombstones);
  m.setMovedBytes(r.moved_bytes);
  m.setResumedTasks(r.resumed_tasks);
  m.setMovedDuringChange(r.moved_during_change);
  m.setResumedCopies(r.resumed_copies);
  m.setTakeovers(r.takeovers);
  m.setHandedOffBy(r.handed_off_by);
  m.setFailedDriver(r.failed_driver);
  m.setStartedMs(r.started_ms);
  m.setFinishedMs(r.finished_ms);
  m.setClientErrorsAtStart(r.client_errors_at_start);
  m.setClientErrors(r.client_errors);
  auto plans = m.initTaskPlans(static_cast<unsigned>(r.task_plans.size()));
  for (size_t i = 0; i < r.task_plans.size(); ++i) {
    const TaskPlan& t = r.task_plans[i];
    plans[i].setTaskId(t.task_id);
    plans[i].setDestination(t.destination);
    plans[i].setCopies(t.copies);
    plans[i].setTombstones(t.tombstones);
    plans[i].setBytes(t.bytes);
  }
}

// Runs inside Decode's catch: capnp throws for what it rejects (bounds, pointers); this returns
// what only the schema's meaning rejects (versions, enumerants a newer writer may add).
Status ReadRecord(changewire::ChangeRecord::Reader m, size_t message_words, ChangeRecord* r) {
  Status v = CheckVersion(m.getFormatVersion(), kChangeRecordFormatVersion, "change record");
  if (!v.ok()) return v;
  const auto kind = static_cast<uint16_t>(m.getKind());
  const auto state = static_cast<uint16_t>(m.getState());
  if (kind > static_cast<uint16_t>(ChangeKind::kParams)) {
    return Status::Corruption("change record of unknown kind " + std::to_string(kind));
  }
  if (state >= kStateNames.size()) {
    return Status::Corruption("change record in unknown state " + std::to_string(state));
  }
  r->change_id = m.getChangeId();
  r->kind = static_cast<ChangeKind>(kind);
  r->node_id = m.getNodeId();
  r->state = static_cast<ChangeState>(state);
  r->error = Str(m.getError());
  r->from_epoch = m.getFromEpoch();
  r->rate_bytes_per_s = m.getRateBytesPerS();
  r->streams_per_node = m.getStreamsPerNode();
  r->planned_copies = m.getPlannedCopies();
  r->planned_tombstones = m.getPlannedTombstones();
  r->planned_bytes = m.getPlannedBytes();
  r->planned_ranges = m.getPlannedRanges();
  r->planned_token_ranges = m.getPlannedTokenRanges();
  r->remapped_keys = m.getRemappedKeys();
  r->live_keys = m.getLiveKeys();
  r->total_copies = m.getTotalCopies();
  r->ideal_fraction = m.getIdealFraction();
  r->replicas_configured = m.getReplicasConfigured();
  r->replicas_after = m.getReplicasAfter();
  r->write_quorum_after = m.getWriteQuorumAfter();
  r->read_quorum_after = m.getReadQuorumAfter();
  r->replicas_before = m.getReplicasBefore();
  r->write_quorum_before = m.getWriteQuorumBefore();
  r->read_quorum_before = m.getReadQuorumBefore();
  r->params_replicas = m.getParamsReplicas();
  r->params_write_quorum = m.getParamsWriteQuorum();
  r->params_read_quorum = m.getParamsReadQuorum();
  r->moved_copies = m.getMovedCopies();
  r->moved_tombstones = m.getMovedTombstones();
  r->moved_bytes = m.getMovedBytes();
  r->resumed_tasks = m.getResumedTasks();
  r->moved_during_change = m.getMovedDuringChange();
  r->resumed_copies = m.getResumedCopies();
  r->takeovers = m.getTakeovers();
  r->handed_off_by = m.getHandedOffBy();
  r->failed_driver = m.getFailedDriver();
  r->started_ms = m.getStartedMs();
  r->finished_ms = m.getFinishedMs();
  r->client_errors_at_start = m.getClientErrorsAtStart();
  r->client_errors = m.getClientErrors();
  auto plans = m.getTaskPlans();
  Status count = CheckCount(plans.size(), message_words, "change record task plans");
  if (!count.ok()) return count;
  r->task_plans.clear();
  r->task_plans.reserve(plans.size());
  for (auto t : plans) {
    r->task_plans.push_back(
        {t.getTaskId(), t.getDestination(), t.getCopies(), t.getTombstones(), t.getBytes()});
  }
  return Status::OK();
}

// Like ReadRecord, for a report (its record included).
Status ReadReport(changewire::ChangeReport::Reader m, size_t message_words, ChangeReport* r) {
  Status v = CheckVersion(m.getFormatVersion(), kChangeReportFormatVersion, "rebalance report");
  if (!v.ok()) return v;
  r->has_change = m.getHasChange();
  // A report without a change still carries a (default) record, written by Encode.
  Status rec = ReadRecord(m.getRecord(), message_words, &r->record);
  if (!rec.ok()) return rec.WithContext("rebalance report");
  r->epoch = m.getEpoch();
  r->driver = m.getDriver();
  r->driver_address = Str(m.getDriverAddress());
  r->from_driver = m.getFromDriver();
  r->elapsed_s = m.getElapsedS();
  r->copies_done = m.getCopiesDone();
  r->tombstones_done = m.getTombstonesDone();
  r->bytes_done = m.getBytesDone();
  r->copies_during_change = m.getCopiesDuringChange();
  auto streams = m.getStreams();
  auto shares = m.getShares();
  Status count = CheckCount(streams.size(), message_words, "rebalance report streams");
  if (count.ok()) count = CheckCount(shares.size(), message_words, "rebalance report shares");
  if (!count.ok()) return count;
  for (auto s : streams) {
    r->streams.push_back({s.getSource(), s.getDestination(), s.getTasksTotal(), s.getTasksDone(),
                          s.getRangesTotal(), s.getRangesDone(), s.getCopiesPlanned(),
                          s.getCopiesDone(), s.getBytesPlanned(), s.getBytesDone()});
  }
  for (auto s : shares) {
    r->shares.push_back(
        {s.getId(), Str(s.getAddress()), Str(s.getState()), s.getShareBefore(), s.getShareAfter()});
  }
  return Status::OK();
}

// Parses `bytes` as one flat-array message and hands the reader and its size in words to `read`.
// Every kj exception (truncated or malformed bytes, the traversal limit) becomes a Corruption here,
// so nothing throws out of Decode.
template <typename Fn>
Status WithMessage(std::string_view bytes, const std::string& what, Fn&& read) {
  if (bytes.empty() || bytes.size() % sizeof(capnp::word) != 0) {
    return Status::Corruption(what + ": " + std::to_string(bytes.size()) +
                              " bytes is not a whole Cap'n Proto message");
  }
  // Copy into word-aligned memory: the input need not be aligned.
  kj::Array<capnp::word> words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), bytes.data(), bytes.size());
  Status result;
  kj::Maybe<kj::Exception> error = kj::runCatchingExceptions([&]() {
    capnp::ReaderOptions options;
    options.traversalLimitInWords = kTraversalLimitWords;
    options.nestingLimit = kNestingLimit;
    capnp::FlatArrayMessageReader reader(words.asPtr(), options);
    result = read(reader, words.size());
  });
  KJ_IF_MAYBE (e, error) {
    return Status::Corruption(what + ": " + e->getDescription().cStr());
  }
  return result;
}

}  // namespace

std::string_view ChangeKindName(ChangeKind kind) {
  switch (kind) {
    case ChangeKind::kAdd:
      return "add";
    case ChangeKind::kJoin:
      return "join";
    case ChangeKind::kRemove:
      return "remove";
    case ChangeKind::kParams:
      return "params";
  }
  return "?";
}

std::string_view ChangeStateName(ChangeState s) {
  const auto i = static_cast<size_t>(s);
  return i < kStateNames.size() ? kStateNames[i] : "?";
}

StatusOr<ChangeState> ParseChangeState(std::string_view name) {
  for (size_t i = 0; i < kStateNames.size(); ++i) {
    if (kStateNames[i] == name) return static_cast<ChangeState>(i);
  }
  return Status::InvalidArgument("unknown change state '" + std::string(name) + "'");
}

std::string ChangeRecord::Encode() const {
  capnp::MallocMessageBuilder message;
  WriteRecord(*this, message.initRoot<changewire::ChangeRecord>());
  return ToBytes(message);
}

StatusOr<ChangeRecord> ChangeRecord::Decode(std::string_view bytes) {
  if (legacy::LooksLikeTextRecord(bytes)) return legacy::DecodeTextRecord(bytes);
  ChangeRecord r;
  Status s = WithMessage(bytes, "change record", [&](capnp::MessageReader& reader, size_t words) {
    return ReadRecord(reader.getRoot<changewire::ChangeRecord>(), words, &r);
  });
  if (!s.ok()) return s;
  return r;
}

std::string ChangeReport::Encode() const {
  capnp::MallocMessageBuilder message;
  auto m = message.initRoot<changewire::ChangeReport>();
  m.setFormatVersion(kChangeReportFormatVersion);
  m.setHasChange(has_change);
  WriteRecord(record, m.initRecord());
  m.setEpoch(epoch);
  m.setDriver(driver);
  m.setDriverAddress(driver_address);
  m.setFromDriver(from_driver);
  m.setElapsedS(elapsed_s);
  m.setCopiesDone(copies_done);
  m.setTombstonesDone(tombstones_done);
  m.setBytesDone(bytes_done);
  m.setCopiesDuringChange(copies_during_change);
  auto ss = m.initStreams(static_cast<unsigned>(streams.size()));
  for (size_t i = 0; i < streams.size(); ++i) {
    const StreamProgress& s = streams[i];
    ss[i].setSource(s.source);
    ss[i].setDestination(s.destination);
    ss[i].setTasksTotal(s.tasks_total);
    ss[i].setTasksDone(s.tasks_done);
    ss[i].setRangesTotal(s.ranges_total);
    ss[i].setRangesDone(s.ranges_done);
    ss[i].setCopiesPlanned(s.copies_planned);
    ss[i].setCopiesDone(s.copies_done);
    ss[i].setBytesPlanned(s.bytes_planned);
    ss[i].setBytesDone(s.bytes_done);
  }
  auto sh = m.initShares(static_cast<unsigned>(shares.size()));
  for (size_t i = 0; i < shares.size(); ++i) {
    const NodeShare& s = shares[i];
    sh[i].setId(s.id);
    sh[i].setAddress(s.address);
    sh[i].setState(s.state);
    sh[i].setShareBefore(s.share_before);
    sh[i].setShareAfter(s.share_after);
  }
  return ToBytes(message);
}

StatusOr<ChangeReport> ChangeReport::Decode(std::string_view bytes) {
  if (legacy::LooksLikeTextReport(bytes)) return legacy::DecodeTextReport(bytes);
  ChangeReport r;
  Status s =
      WithMessage(bytes, "rebalance report", [&](capnp::MessageReader& reader, size_t words) {
        return ReadReport(reader.getRoot<changewire::ChangeReport>(), words, &r);
      });
  if (!s.ok()) return s;
  return r;
}

}  // namespace shardkv
