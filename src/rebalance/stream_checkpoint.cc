#include "rebalance/stream_checkpoint.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "rebalance/stream_checkpoint.capnp.h"

namespace shardkv::rebalance {
namespace {

// A checkpoint is a few words plus the cursor (a key) and the merge ids (at most RF): 1 MiB
// bounds a decode far above anything real.
constexpr uint64_t kTraversalLimitWords = (1u << 20) / sizeof(capnp::word);

// Checks what capnp cannot: a merge index the sink would use to index merge_ids.
Status Validate(const StreamCheckpoint& c) {
  if (c.phase == 1 && c.merge_index >= c.merge_ids.size()) {
    return Status::Corruption("stream checkpoint: merge index " + std::to_string(c.merge_index) +
                              " of " + std::to_string(c.merge_ids.size()) + " merge sources");
  }
  return Status::OK();
}

// ---- v0.1.0 text, read-only ------------------------------------------------------------------
// "<phase> <done> <copies> <tombstones> <bytes> <merge_index> <ids,|-> <hex cursor|->
// [<range_index> <copies_during_change>]" (the last two were added after the first release
// wrote checkpoints, so they are optional).

bool LooksLikeText(std::string_view bytes) {
  // A capnp flat array starts with its segment count minus one, a little-endian uint32 whose
  // first byte is 0 for the one-segment messages Encode writes; the text starts "0 " or "1 ".
  return bytes.size() >= 2 && (bytes[0] == '0' || bytes[0] == '1') && bytes[1] == ' ';
}

std::string_view NextToken(std::string_view* in) {
  while (!in->empty() && in->front() == ' ') in->remove_prefix(1);
  const size_t end = std::min(in->find(' '), in->size());
  std::string_view token = in->substr(0, end);
  in->remove_prefix(end);
  return token;
}

template <typename T>
bool ParseNumber(std::string_view token, T* out, int base = 10) {
  if (token.empty()) return false;
  auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), *out, base);
  return ec == std::errc() && ptr == token.data() + token.size();
}

StatusOr<StreamCheckpoint> DecodeText(std::string_view text) {
  const Status bad = Status::Corruption("stream checkpoint (v0.1.0 text) is malformed");
  StreamCheckpoint c;
  int done = 0;
  std::string_view in = text;
  if (!ParseNumber(NextToken(&in), &c.phase) || c.phase < 0 || c.phase > 1 ||
      !ParseNumber(NextToken(&in), &done) || !ParseNumber(NextToken(&in), &c.copies) ||
      !ParseNumber(NextToken(&in), &c.tombstones) || !ParseNumber(NextToken(&in), &c.bytes) ||
      !ParseNumber(NextToken(&in), &c.merge_index)) {
    return bad;
  }
  c.done = done != 0;
  const std::string_view ids = NextToken(&in);
  const std::string_view cursor = NextToken(&in);
  if (ids.empty() || cursor.empty()) return bad;
  if (ids != "-") {
    std::string_view list = ids;
    while (!list.empty()) {
      const size_t comma = std::min(list.find(','), list.size());
      uint32_t id = 0;
      if (comma > 0) {
        if (!ParseNumber(list.substr(0, comma), &id)) return bad;
        c.merge_ids.push_back(id);
      }
      list.remove_prefix(std::min(comma + 1, list.size()));
    }
  }
  if (cursor != "-") {
    if (cursor.size() % 2 != 0) return bad;
    for (size_t i = 0; i < cursor.size(); i += 2) {
      uint8_t byte = 0;
      if (!ParseNumber(cursor.substr(i, 2), &byte, 16)) return bad;
      c.cursor += static_cast<char>(byte);
    }
  }
  // Absent in a checkpoint of the first format (one range per task).
  const std::string_view range_index = NextToken(&in);
  const std::string_view during = NextToken(&in);
  if (!range_index.empty() && (!ParseNumber(range_index, &c.range_index) ||
                               !ParseNumber(during, &c.copies_during_change))) {
    c.range_index = 0;
    c.copies_during_change = 0;
  }
  return c;
}

}  // namespace

std::string StreamCheckpoint::Key(uint64_t change, uint64_t task) {
  return "rebalance/ckpt/" + std::to_string(change) + "/" + std::to_string(task);
}

std::string StreamCheckpoint::Encode() const {
  capnp::MallocMessageBuilder message;
  auto m = message.initRoot<ckptwire::StreamCheckpoint>();
  m.setFormatVersion(kStreamCheckpointFormatVersion);
  m.setPhase(phase == 0 ? ckptwire::Phase::PULL : ckptwire::Phase::MERGE);
  m.setDone(done);
  m.setCursor(
      capnp::Data::Reader(reinterpret_cast<const capnp::byte*>(cursor.data()), cursor.size()));
  m.setCopies(copies);
  m.setTombstones(tombstones);
  m.setBytes(bytes);
  auto ids = m.initMergeIds(static_cast<unsigned>(merge_ids.size()));
  for (size_t i = 0; i < merge_ids.size(); ++i) ids.set(static_cast<unsigned>(i), merge_ids[i]);
  m.setMergeIndex(merge_index);
  m.setRangeIndex(range_index);
  m.setCopiesDuringChange(copies_during_change);
  kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  auto out = words.asBytes();
  return std::string(reinterpret_cast<const char*>(out.begin()), out.size());
}

StatusOr<StreamCheckpoint> StreamCheckpoint::Decode(std::string_view bytes) {
  if (LooksLikeText(bytes)) {
    auto c = DecodeText(bytes);
    if (!c.ok()) return c;
    Status valid = Validate(*c);
    if (!valid.ok()) return valid;
    return c;
  }
  if (bytes.empty() || bytes.size() % sizeof(capnp::word) != 0) {
    return Status::Corruption("stream checkpoint: " + std::to_string(bytes.size()) +
                              " bytes is not a whole Cap'n Proto message");
  }
  // Copy into word-aligned memory: the input need not be aligned.
  kj::Array<capnp::word> words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), bytes.data(), bytes.size());
  StreamCheckpoint c;
  Status result;
  // Every kj exception (truncated or malformed bytes, the traversal limit) becomes a Corruption
  // below: nothing throws out of Decode.
  kj::Maybe<kj::Exception> error = kj::runCatchingExceptions([&]() {
    capnp::ReaderOptions options;
    options.traversalLimitInWords = kTraversalLimitWords;
    options.nestingLimit = 4;
    capnp::FlatArrayMessageReader reader(words.asPtr(), options);
    auto m = reader.getRoot<ckptwire::StreamCheckpoint>();
    const uint32_t version = m.getFormatVersion();
    if (version == 0) {
      result = Status::Corruption("stream checkpoint without a format version");
      return;
    }
    if (version > kStreamCheckpointFormatVersion) {
      result = Status::NotSupported("stream checkpoint format version " + std::to_string(version) +
                                    " is newer than this build reads (version " +
                                    std::to_string(kStreamCheckpointFormatVersion) +
                                    "); upgrade this node");
      return;
    }
    const auto phase = static_cast<uint16_t>(m.getPhase());
    if (phase > 1) {
      result = Status::Corruption("stream checkpoint in unknown phase " + std::to_string(phase));
      return;
    }
    c.phase = phase;
    c.done = m.getDone();
    auto cursor = m.getCursor();
    c.cursor.assign(reinterpret_cast<const char*>(cursor.begin()), cursor.size());
    c.copies = m.getCopies();
    c.tombstones = m.getTombstones();
    c.bytes = m.getBytes();
    for (uint32_t id : m.getMergeIds()) c.merge_ids.push_back(id);
    c.merge_index = m.getMergeIndex();
    c.range_index = m.getRangeIndex();
    c.copies_during_change = m.getCopiesDuringChange();
    result = Validate(c);
  });
  KJ_IF_MAYBE (e, error) {
    return Status::Corruption(std::string("stream checkpoint: ") + e->getDescription().cStr());
  }
  if (!result.ok()) return result;
  return c;
}

}  // namespace shardkv::rebalance
