// redis-cluster-load: bulk-loads keys "key:<i>" (i in [0, N)) with fixed-size values into a
// Redis Cluster, for bench/scripts/redis_cluster_rebalance.sh.
//
//   redis-cluster-load --seed HOST:PORT [--keys N] [--value-size B] [--batch K] [--prefix P]
//
// It reads the slot -> master map once with CLUSTER SLOTS from the seed, then runs one thread
// per master. Each thread walks all N keys, keeps those whose slot (CRC16-XMODEM of the key, or
// of its {hash tag}, mod 16384) that master owns, and sends them as pipelined SETs over one
// blocking hiredis connection, --batch commands at a time before reading the replies. Any reply
// other than +OK (a MOVED/ASK because the map changed, an OOM, ...) is counted as an error; the
// exit status is 1 if there was any, or if the per-master key counts do not add up to N.
//
// Prints "LOAD keys=N seconds=S keys_per_s=R errors=E" on stdout as its last line.
#include <hiredis/hiredis.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

// CRC16-CCITT (XMODEM): poly 0x1021, init 0, no reflection; what Redis Cluster uses.
uint16_t Crc16(std::string_view s) {
  uint16_t crc = 0;
  for (unsigned char c : s) {
    crc ^= static_cast<uint16_t>(c) << 8;
    for (int b = 0; b < 8; ++b)
      crc = (crc & 0x8000) ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                           : static_cast<uint16_t>(crc << 1);
  }
  return crc;
}

// Redis Cluster key -> slot, with the hash tag rule: if the key has a '{' followed later by a
// '}' with at least one byte between them, only those bytes are hashed.
int KeySlot(std::string_view key) {
  auto open = key.find('{');
  if (open != std::string_view::npos) {
    auto close = key.find('}', open + 1);
    if (close != std::string_view::npos && close != open + 1)
      key = key.substr(open + 1, close - open - 1);
  }
  return Crc16(key) & 16383;
}

struct Master {
  std::string host;
  int port = 0;
};

bool ParseHostPort(const std::string& s, Master* m) {
  auto colon = s.rfind(':');
  if (colon == std::string::npos) return false;
  m->host = s.substr(0, colon);
  m->port = std::atoi(s.c_str() + colon + 1);
  return m->port > 0;
}

[[noreturn]] void Die(const std::string& msg) {
  std::fprintf(stderr, "redis-cluster-load: %s\n", msg.c_str());
  std::exit(2);
}

void Usage(FILE* f) {
  std::fprintf(f,
               "usage: redis-cluster-load --seed HOST:PORT [--keys N] [--value-size B] "
               "[--batch K] [--prefix P]\n"
               "  --keys N        keys to write, named <prefix><i> for i in [0, N) (1000000)\n"
               "  --value-size B  bytes per value (100)\n"
               "  --batch K       SETs sent per round trip on each master's connection (1000)\n"
               "  --prefix P      key prefix (\"key:\")\n");
}

}  // namespace

int main(int argc, char** argv) {
  Master seed;
  long long keys = 1000000;
  long value_size = 100;
  long batch = 1000;
  std::string prefix = "key:";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) Die("missing value for " + a);
      return argv[++i];
    };
    if (a == "--seed") {
      if (!ParseHostPort(next(), &seed)) Die("--seed wants HOST:PORT");
    } else if (a == "--keys") {
      keys = std::atoll(next().c_str());
    } else if (a == "--value-size") {
      value_size = std::atol(next().c_str());
    } else if (a == "--batch") {
      batch = std::atol(next().c_str());
    } else if (a == "--prefix") {
      prefix = next();
    } else if (a == "-h" || a == "--help") {
      Usage(stdout);
      return 0;
    } else {
      Usage(stderr);
      return 2;
    }
  }
  if (seed.port == 0) Die("--seed HOST:PORT is required");
  if (keys < 0 || value_size < 0 || batch < 1) Die("bad --keys, --value-size or --batch");

  // Slot map from CLUSTER SLOTS: [[start, end, [host, port, id, ...], replicas...], ...].
  std::vector<int> slot_owner(16384, -1);
  std::vector<Master> masters;
  {
    redisContext* c = redisConnect(seed.host.c_str(), seed.port);
    if (c == nullptr || c->err) Die("connect to seed: " + std::string(c ? c->errstr : "oom"));
    auto* r = static_cast<redisReply*>(redisCommand(c, "CLUSTER SLOTS"));
    if (r == nullptr || r->type != REDIS_REPLY_ARRAY) Die("CLUSTER SLOTS failed");
    for (size_t i = 0; i < r->elements; ++i) {
      redisReply* range = r->element[i];
      if (range->type != REDIS_REPLY_ARRAY || range->elements < 3) Die("bad CLUSTER SLOTS entry");
      long long lo = range->element[0]->integer, hi = range->element[1]->integer;
      redisReply* node = range->element[2];
      Master m{node->element[0]->str, static_cast<int>(node->element[1]->integer)};
      if (m.host.empty()) m.host = seed.host;  // "" means "the address you reached me on".
      int idx = -1;
      for (size_t k = 0; k < masters.size(); ++k)
        if (masters[k].host == m.host && masters[k].port == m.port) idx = static_cast<int>(k);
      if (idx < 0) {
        idx = static_cast<int>(masters.size());
        masters.push_back(m);
      }
      for (long long s = lo; s <= hi; ++s) slot_owner[s] = idx;
    }
    freeReplyObject(r);
    redisFree(c);
  }
  for (int s = 0; s < 16384; ++s)
    if (slot_owner[s] < 0) Die("slot " + std::to_string(s) + " is not served");

  const std::string value(static_cast<size_t>(value_size), 'v');
  std::vector<long long> sent(masters.size(), 0);
  std::atomic<long long> errors{0};

  auto worker = [&](int idx) {
    const Master& m = masters[idx];
    redisContext* c = redisConnect(m.host.c_str(), m.port);
    if (c == nullptr || c->err) Die("connect to " + m.host + ":" + std::to_string(m.port));
    long long pending = 0, mine = 0, errs = 0;
    auto drain = [&]() {
      for (; pending > 0; --pending) {
        void* rv = nullptr;
        if (redisGetReply(c, &rv) != REDIS_OK) Die("connection error: " + std::string(c->errstr));
        auto* r = static_cast<redisReply*>(rv);
        if (r->type != REDIS_REPLY_STATUS || std::strcmp(r->str, "OK") != 0) {
          if (errs++ < 5)
            std::fprintf(stderr, "redis-cluster-load: %s:%d replied %s\n", m.host.c_str(), m.port,
                         r->str ? r->str : "(non-string)");
        }
        freeReplyObject(r);
      }
    };
    std::string key;
    for (long long i = 0; i < keys; ++i) {
      key.assign(prefix);
      key += std::to_string(i);
      if (slot_owner[KeySlot(key)] != idx) continue;
      redisAppendCommand(c, "SET %b %b", key.data(), key.size(), value.data(), value.size());
      ++mine;
      if (++pending >= batch) drain();
    }
    drain();
    sent[idx] = mine;
    errors += errs;
    redisFree(c);
  };

  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (size_t k = 0; k < masters.size(); ++k) threads.emplace_back(worker, static_cast<int>(k));
  for (auto& t : threads) t.join();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  long long total = 0;
  for (size_t k = 0; k < masters.size(); ++k) {
    std::fprintf(stderr, "redis-cluster-load: %s:%d got %lld keys\n", masters[k].host.c_str(),
                 masters[k].port, sent[k]);
    total += sent[k];
  }
  std::printf("LOAD keys=%lld seconds=%.3f keys_per_s=%.0f errors=%lld\n", total, secs,
              secs > 0 ? static_cast<double>(total) / secs : 0.0, errors.load());
  return (errors.load() == 0 && total == keys) ? 0 : 1;
}
