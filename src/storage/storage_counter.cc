// Storage's counter writer state (design.md "Counters"): this node's own totals of each counter
// it coordinated an increment of, in `meta` under "storage/counter/" ‖ user key.
//
// Why a store of its own rather than the data record: a coordinator need not be a replica of the
// key, and a replica's data record can be dropped (the range moves away) and come back older. A
// writer's totals may only grow, or replicas merging by maximum would lose increments, so they
// live where nothing but this code writes them. A rebuilt node loses them with its database, and
// its new incarnation makes it a new writer.
#include <algorithm>
#include <random>

#include "storage/storage.h"
#include "storage/storage_rep.h"

namespace shardkv::storage {
namespace {

constexpr std::string_view kIncarnationKey = "storage/incarnation";
// Written (synced) by a clean close and removed by the next open: its absence at open means the
// last run stopped uncleanly (kill -9, power loss), when the totals' unsynced last writes may be
// lost, so this node counts on as a new writer rather than from totals that went back.
constexpr std::string_view kCleanCloseKey = "storage/clean_close";
constexpr std::string_view kCounterPrefix = "storage/counter/";

void PutFixed64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t GetFixed64(std::string_view in, size_t pos) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(in[pos + i]);
  return v;
}

// actor (8) ‖ base ts (8) ‖ base node (4, in 8) ‖ inc (8) ‖ dec (8): fixed widths, little-endian.
constexpr size_t kTotalsBytes = 40;
std::string EncodeTotals(const CounterEntry& c) {
  std::string out;
  PutFixed64(&out, c.actor);
  PutFixed64(&out, c.base.timestamp);
  PutFixed64(&out, c.base.node_id);
  PutFixed64(&out, c.inc);
  PutFixed64(&out, c.dec);
  return out;
}

}  // namespace

Status Storage::Rep::LoadCounterIncarnation() {
  Rep* rep = this;
  std::string text;
  std::string clean;
  rocksdb::Status rs =
      rep->db->Get(rocksdb::ReadOptions(), rep->meta_cf, ToSlice(kCleanCloseKey), &clean);
  if (!rs.ok() && !rs.IsNotFound()) return rep->Read(rs, "reading the clean-close mark");
  const bool clean_close = rs.ok();
  rs = rep->db->Get(rocksdb::ReadOptions(), rep->meta_cf, ToSlice(kIncarnationKey), &text);
  if (rs.ok() && clean_close) {
    if (text.size() != 8) return Status::Corruption("unreadable counter incarnation in meta");
    rep->counter_incarnation = static_cast<uint32_t>(GetFixed64(text, 0));
    return rep->Write(
        rep->db->Delete(rep->meta_write_options, rep->meta_cf, ToSlice(kCleanCloseKey)),
        "clearing the clean-close mark");
  }
  if (!rs.ok() && !rs.IsNotFound()) return rep->Read(rs, "reading the counter incarnation");
  // Drawn for a new database (a node rebuilt from nothing must not count as the writer it was)
  // and after an unclean stop (the totals' last, unsynced writes may be lost).
  std::random_device rd;
  uint32_t incarnation = 0;
  while (incarnation == 0) incarnation = rd();
  std::string out;
  PutFixed64(&out, incarnation);
  SHARDKV_RETURN_IF_ERROR(
      rep->Write(rep->db->Put(rep->meta_write_options, rep->meta_cf, ToSlice(kIncarnationKey), out),
                 "writing the counter incarnation"));
  rep->counter_incarnation = incarnation;
  return Status::OK();
}

void Storage::Rep::MarkCleanClose() {
  // Best effort: if it fails, the next open draws a new incarnation, which is always safe.
  (void)db->Put(meta_write_options, meta_cf, ToSlice(kCleanCloseKey), "1");
}

uint64_t Storage::CounterActor() const {
  return (static_cast<uint64_t>(rep_->options.node_id) << 32) | rep_->counter_incarnation;
}

StatusOr<CounterEntry> Storage::AddToCounter(KeyRef key, Version base, const Envelope& read,
                                             int64_t delta) {
  if (rep_->db == nullptr) return Status::FailedPrecondition("storage is closed");
  SHARDKV_RETURN_IF_ERROR(ValidateWrite(key.key, false, {}));
  // Keyed (and locked) by the user key alone, not the token: a key's token depends on the map's
  // placement parameters (jump mode's shard), and the totals must stay with the key whatever
  // the map.
  std::string meta_key(kCounterPrefix);
  meta_key += key.key;
  std::lock_guard<std::mutex> lock(rep_->stripes[rep_->StripeOf(meta_key)]);
  CounterEntry entry{CounterActor(), base, 0, 0};
  std::string stored;
  rocksdb::Status rs = rep_->db->Get(rocksdb::ReadOptions(), rep_->meta_cf, meta_key, &stored);
  if (rs.ok()) {
    if (stored.size() != kTotalsBytes) return Status::Corruption("unreadable counter totals");
    const Version stored_base{GetFixed64(stored, 8), static_cast<uint32_t>(GetFixed64(stored, 16))};
    // Totals of an earlier incarnation stay in the replicas as that writer's: start from zero.
    // An older base was reset by a SET or DEL since: start again from zero. A newer one means
    // the read that chose `base` was behind this writer's own last increment: keep counting there.
    // A count from nothing goes on only while the read shows one of this writer's counts from
    // nothing (its last, or an earlier one: a read taken before the last one's write landed):
    // with none in the read, they were reset by a DEL or SET whose register may since have been
    // collected, and counting on there would put this increment under that reset too. (Asking
    // for the last one itself would begin a new entry whenever a read overtook the last write.)
    CounterEntry mine{entry.actor, stored_base, GetFixed64(stored, 24), GetFixed64(stored, 32)};
    bool go_on = false;
    if (GetFixed64(stored, 0) == entry.actor) {
      if (mine.from_nothing()) {
        go_on = std::any_of(read.counter.begin(), read.counter.end(), [&](const CounterEntry& c) {
          return c.actor == mine.actor && c.from_nothing();
        });
      } else {
        go_on = base.node_id == kCountFromNothing ? read.version() < stored_base
                                                  : !(stored_base < base);
      }
    }
    if (go_on) {
      entry = mine;
    } else if (GetFixed64(stored, 0) == entry.actor && entry.from_nothing() &&
               mine.from_nothing()) {
      // A new count from nothing must never share its start with this writer's last one (two
      // increments in one millisecond whose reads both predate it): from zero again under the
      // same (actor, base), the two would merge by maximum and one increment would be lost.
      entry.base.timestamp = std::max(entry.base.timestamp, mine.base.timestamp + 1);
    }
  } else if (!rs.IsNotFound()) {
    return rep_->Read(rs, "reading counter totals");
  }
  const uint64_t magnitude =
      delta < 0 ? uint64_t{0} - static_cast<uint64_t>(delta) : static_cast<uint64_t>(delta);
  uint64_t& total = delta < 0 ? entry.dec : entry.inc;
  if (total > UINT64_MAX - magnitude) {
    return Status::InvalidArgument("this node's counter totals would overflow");
  }
  total += magnitude;
  SHARDKV_RETURN_IF_ERROR(rep_->Write(
      rep_->db->Put(rep_->data_write_options, rep_->meta_cf, meta_key, EncodeTotals(entry)),
      "writing counter totals"));
  return entry;
}

}  // namespace shardkv::storage
