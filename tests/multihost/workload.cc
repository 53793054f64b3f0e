// shardkv-bed-workload: the multi-host bed's standalone client (design.md "Multi-host test
// bed"). It runs in the root namespace or inside a host's namespace (`ip netns exec`), so that
// clients sit on each side of a split, and links only shardkv's public client and admin API.
//
//   run     single-writer keys with strictly increasing versions, tombstone-marker keys (put v1,
//           put v2, delete, never written again), concurrent readers; records every operation
//           to --history (history_file.h). One Client per thread, fixed seeds, bounded duration.
//   sample  polls one node's map (Admin::MapOf) every --interval-ms, appending
//           "<t_us> <id> <cluster id> <epoch> <hash>" to --out: run inside the node's namespace, it
//           sees its node even when the node is isolated.
//   form    forms a cluster from running unformed nodes (Admin::FormCluster): the fallback
//           while `shardkv cluster init` does not exist.
//   load    writes --count keys of --bytes each (data for a change to stream).
//   count   --clients threads, each with a Client of its own through a different node first,
//           increment (+1, or -1 one time in five) counters ctr.0 .. ctr.<--counters - 1> for
//           --duration-ms, then write "<key> <acked sum> <failed +1s> <failed -1s> <ops>" per
//           counter to --out (design.md "Counters": the final value must lie within
//           [acked - failed -1s, acked + failed +1s]). One operation in four is instead an HSET
//           of a field of its own in hash.0 or hash.1; each acknowledged one is written as
//           "<key> <field>" to --out.fields (design.md "Hashes": every one must be read back).
//           One in six of the rest is an SADD of a member of its own to set.0 or set.1, or an
//           SREM of the last one it added; each member goes to --out.members as "<key> <member>
//           present|absent|either" (design.md "Sets": an acknowledged SADD no acknowledged SREM
//           saw must be there, one an acknowledged SREM saw must not).
// Exit status: 0 done, 1 failed, 2 usage error.
#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include "multihost/history_file.h"
#include "shardkv/admin.h"
#include "shardkv/client.h"
#include "testing/history_validator.h"

namespace {

using namespace shardkv;
using multihost::HistoryWriter;
using multihost::MonotonicMicros;
using Clock = std::chrono::steady_clock;

struct RunFlags {
  std::vector<std::string> seeds;
  std::string prefix = "A";
  std::vector<std::string> read_prefixes;  // other workloads' prefixes (same writers and keys)
  int writers = 2, readers = 2, keys = 20, markers = 20;
  int duration_ms = 5000, timeout_ms = 2000, rate = 20;  // rate: ops/s per thread
  uint64_t seed = 1;
  std::string history;
  std::string secret_file;
  // Each write through a new Client, as separate `shardkv put` processes do: no HLC session
  // carries one write's timestamp to the next (the findings' A2 needs this).
  bool fresh_clients = false;
};

std::string KeyName(const std::string& prefix, int writer, int j) {
  return prefix + ".w" + std::to_string(writer) + ".k" + std::to_string(j);
}
std::string MarkerName(const std::string& prefix, int writer, int j) {
  return prefix + ".w" + std::to_string(writer) + ".d" + std::to_string(j);
}

ClientOptions ClientFor(const RunFlags& f) {
  ClientOptions o;
  o.seeds = f.seeds;
  o.timeout_ms = static_cast<uint32_t>(f.timeout_ms);
  o.auth_secret_file = f.secret_file;
  return o;
}

// Paces a thread to `rate` operations per second (a load shape, not synchronisation).
void Pace(Clock::time_point* next, int rate) {
  *next += std::chrono::microseconds(1000000 / std::max(rate, 1));
  std::this_thread::sleep_until(*next);
}

void Writer(const RunFlags& f, int w, Client* client, HistoryWriter* history,
            Clock::time_point end) {
  std::vector<uint64_t> version(static_cast<size_t>(f.keys), 0);
  int marker = 0;
  uint64_t marker_version = 0;  // of the current marker: 1, 2 put; 3 and up delete (retried)
  auto next = Clock::now();
  for (uint64_t op = 0; Clock::now() < end && op < 1000000; ++op, Pace(&next, f.rate)) {
    std::string key;
    uint64_t v = 0;
    bool del = false;
    if (op % 4 == 3 && marker < f.markers) {
      key = MarkerName(f.prefix, w, marker);
      v = ++marker_version;
      del = v >= 3;
    } else {
      const int j = static_cast<int>(op % static_cast<uint64_t>(f.keys));
      key = KeyName(f.prefix, w, j);
      v = ++version[static_cast<size_t>(j)];
    }
    const int64_t invoked = MonotonicMicros();
    StatusOr<uint64_t> r =
        del ? client->Delete(key) : client->Put(key, testing::EncodeValue(key, v, 48));
    history->Write(key, v, del, invoked, MonotonicMicros(), r.status());
    // The delete is retried (a new version) until acknowledged; then the marker is never
    // written again.
    if (del && r.ok()) {
      ++marker;
      marker_version = 0;
    }
  }
}

void Reader(const RunFlags& f, int r, Client* client, HistoryWriter* history,
            Clock::time_point end) {
  std::vector<std::string> prefixes{f.prefix};
  prefixes.insert(prefixes.end(), f.read_prefixes.begin(), f.read_prefixes.end());
  std::mt19937_64 rng(f.seed * 7919 + static_cast<uint64_t>(r));
  auto next = Clock::now();
  for (uint64_t op = 0; Clock::now() < end && op < 1000000; ++op, Pace(&next, f.rate)) {
    const std::string& prefix = prefixes[rng() % prefixes.size()];
    const int w = static_cast<int>(rng() % static_cast<uint64_t>(f.writers));
    const bool marker = rng() % 4 == 0;
    const std::string key =
        marker ? MarkerName(prefix, w, static_cast<int>(rng() % static_cast<uint64_t>(f.markers)))
               : KeyName(prefix, w, static_cast<int>(rng() % static_cast<uint64_t>(f.keys)));
    const int64_t invoked = MonotonicMicros();
    StatusOr<std::string> value = client->Get(key);
    const int64_t completed = MonotonicMicros();
    if (value.ok()) {
      StatusOr<uint64_t> v = testing::DecodeValue(key, *value);
      history->Read(key, invoked, completed, v.ok() ? std::optional(*v) : std::nullopt, v.status());
    } else if (value.status().IsNotFound()) {
      history->Read(key, invoked, completed, std::nullopt, Status::OK());
    } else {
      history->Read(key, invoked, completed, std::nullopt, value.status());
    }
  }
}

int Run(const RunFlags& f) {
  auto history = HistoryWriter::Open(f.history);
  if (!history.ok()) {
    std::fprintf(stderr, "%s\n", history.status().ToString().c_str());
    return 1;
  }
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < f.writers + f.readers; ++i) {
    // Bounded: a side that cannot reach any seed yet (a split just began) retries a while.
    StatusOr<std::unique_ptr<Client>> c = Status::Unavailable("not tried");
    for (int attempt = 0; attempt < 20 && !c.ok(); ++attempt) {
      c = Client::Connect(ClientFor(f));
      if (!c.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    if (!c.ok()) {
      std::fprintf(stderr, "connect: %s\n", c.status().ToString().c_str());
      return 1;
    }
    clients.push_back(std::move(*c));
  }
  const auto end = Clock::now() + std::chrono::milliseconds(f.duration_ms);
  std::vector<std::thread> threads;
  for (int w = 0; w < f.writers; ++w) {
    threads.emplace_back(Writer, std::cref(f), w, clients[static_cast<size_t>(w)].get(),
                         history->get(), end);
  }
  for (int r = 0; r < f.readers; ++r) {
    threads.emplace_back(Reader, std::cref(f), r, clients[static_cast<size_t>(f.writers + r)].get(),
                         history->get(), end);
  }
  for (std::thread& t : threads) t.join();
  return 0;
}

std::string secret_file;  // --auth-secret-file, of every subcommand

int Sample(const std::string& address, uint32_t id, const std::string& out, int duration_ms,
           int interval_ms) {
  AdminOptions options;
  options.auth_secret_file = secret_file;
  options.seeds = {address};
  options.timeout_ms = static_cast<uint32_t>(std::max(interval_ms, 200));
  auto admin = Admin::Create(options);
  if (!admin.ok()) return 1;
  std::FILE* file = std::fopen(out.c_str(), "a");
  if (file == nullptr) return 1;
  const auto end = Clock::now() + std::chrono::milliseconds(duration_ms);
  auto next = Clock::now();
  while (Clock::now() < end) {
    StatusOr<ClusterMap> map = (*admin)->MapOf(address);
    if (map.ok()) {
      std::fprintf(file, "%" PRId64 " %u %" PRIu64 " %" PRIu64 " %016" PRIx64 "\n",
                   MonotonicMicros(), id, map->cluster_id(), map->epoch(), map->ContentHash());
      std::fflush(file);
    }
    next += std::chrono::milliseconds(interval_ms);
    std::this_thread::sleep_until(next);
  }
  std::fclose(file);
  return 0;
}

int Form(const std::vector<std::string>& addresses, uint32_t replicas) {
  AdminOptions options;
  options.auth_secret_file = secret_file;
  options.seeds = addresses;
  auto admin = Admin::Create(options);
  if (!admin.ok()) {
    std::fprintf(stderr, "%s\n", admin.status().ToString().c_str());
    return 1;
  }
  std::vector<ClusterNode> nodes;
  for (size_t i = 0; i < addresses.size(); ++i) {
    nodes.push_back({static_cast<uint32_t>(i + 1), addresses[i]});
  }
  ClusterParams params;
  params.replication_factor = replicas;
  params.write_quorum = replicas / 2 + 1;
  params.read_quorum = replicas / 2 + 1;
  StatusOr<ClusterMap> map = (*admin)->FormCluster(nodes, params);
  if (!map.ok()) {
    std::fprintf(stderr, "form: %s\n", map.status().ToString().c_str());
    return 1;
  }
  std::printf("formed cluster %" PRIu64 " at epoch %" PRIu64 " with %zu nodes\n", map->cluster_id(),
              map->epoch(), nodes.size());
  return 0;
}

int Load(const std::vector<std::string>& seeds, int count, int bytes) {
  ClientOptions o;
  o.seeds = seeds;
  o.auth_secret_file = secret_file;
  auto client = Client::Connect(o);
  if (!client.ok()) return 1;
  const std::string value(static_cast<size_t>(bytes), 'x');
  constexpr int kBatch = 200;
  for (int i = 0; i < count; i += kBatch) {
    std::vector<std::pair<std::string, std::string>> items;
    for (int j = i; j < std::min(count, i + kBatch); ++j) {
      items.emplace_back("load." + std::to_string(j), value);
    }
    for (const auto& r : (*client)->MultiPut(items)) {
      if (!r.ok()) {
        std::fprintf(stderr, "load: %s\n", r.status().ToString().c_str());
        return 1;
      }
    }
  }
  return 0;
}

struct CountFlags {
  std::vector<std::string> seeds;
  int clients = 8, counters = 4, duration_ms = 5000, timeout_ms = 2000;
  uint64_t seed = 1;
  std::string out;
};

int Count(const CountFlags& f) {
  struct Tally {
    std::atomic<int64_t> acked{0}, failed_inc{0}, failed_dec{0}, ops{0};
  };
  std::vector<Tally> tally(static_cast<size_t>(f.counters));
  const auto end = Clock::now() + std::chrono::milliseconds(f.duration_ms);
  std::atomic<int> broken{0};
  std::vector<std::vector<std::pair<std::string, std::string>>> fields(
      static_cast<size_t>(f.clients));  // per thread: the acknowledged HSETs
  // Per thread: the members it added to set.0 or set.1, and what must be true of each at the end
  // ("present": an acknowledged SADD that no acknowledged SREM saw; "absent": an acknowledged
  // SREM saw it; "either": an SADD or SREM that failed).
  struct Member {
    std::string key, name, state;
  };
  std::vector<std::vector<Member>> members(static_cast<size_t>(f.clients));
  std::vector<std::thread> threads;
  for (int t = 0; t < f.clients; ++t) {
    threads.emplace_back([&, t] {
      ClientOptions o;
      // Seeds rotated per thread, so that the threads' first choices cover every node.
      for (size_t i = 0; i < f.seeds.size(); ++i) {
        o.seeds.push_back(f.seeds[(i + static_cast<size_t>(t)) % f.seeds.size()]);
      }
      o.timeout_ms = static_cast<uint32_t>(f.timeout_ms);
      o.auth_secret_file = secret_file;
      auto client = Client::Connect(o);
      if (!client.ok()) {
        std::fprintf(stderr, "count: %s\n", client.status().ToString().c_str());
        ++broken;
        return;
      }
      std::mt19937_64 rng(f.seed * 1000 + static_cast<uint64_t>(t));
      for (int n = 0; n < 1000000 && Clock::now() < end; ++n) {
        if (rng() % 4 == 0) {
          const std::string key = "hash." + std::to_string(rng() % 2);
          std::string field = "t" + std::to_string(t) + "." + std::to_string(n);
          if ((*client)->HSet(key, {{field, "v"}}).ok()) {
            fields[static_cast<size_t>(t)].emplace_back(key, std::move(field));
          }
          continue;
        }
        if (rng() % 6 == 0) {
          std::vector<Member>& mine = members[static_cast<size_t>(t)];
          // One time in three, an SREM of the last member this thread added (if it is there).
          if (!mine.empty() && mine.back().state == "present" && rng() % 3 == 0) {
            const StatusOr<uint32_t> r = (*client)->SRem(mine.back().key, {mine.back().name});
            // Removed nothing: the SREM did not see the add, which must then stay (add wins).
            if (!r.ok() || *r == 1) mine.back().state = r.ok() ? "absent" : "either";
            continue;
          }
          Member m{"set." + std::to_string(rng() % 2),
                   "t" + std::to_string(t) + "." + std::to_string(n), "either"};
          if ((*client)->SAdd(m.key, {m.name}).ok()) m.state = "present";
          mine.push_back(std::move(m));
          continue;
        }
        const size_t i = rng() % tally.size();
        const int64_t delta = rng() % 5 == 0 ? -1 : 1;
        const StatusOr<int64_t> r = (*client)->Incr("ctr." + std::to_string(i), delta);
        ++tally[i].ops;
        if (r.ok()) {
          tally[i].acked += delta;
        } else {
          ++(delta > 0 ? tally[i].failed_inc : tally[i].failed_dec);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::FILE* file = std::fopen(f.out.c_str(), "w");
  if (file == nullptr) return 1;
  for (size_t i = 0; i < tally.size(); ++i) {
    std::fprintf(file, "ctr.%zu %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 "\n", i,
                 tally[i].acked.load(), tally[i].failed_inc.load(), tally[i].failed_dec.load(),
                 tally[i].ops.load());
  }
  std::fclose(file);
  file = std::fopen((f.out + ".fields").c_str(), "w");
  if (file == nullptr) return 1;
  for (const auto& mine : fields) {
    for (const auto& [key, field] : mine) std::fprintf(file, "%s %s\n", key.c_str(), field.c_str());
  }
  std::fclose(file);
  file = std::fopen((f.out + ".members").c_str(), "w");
  if (file == nullptr) return 1;
  for (const auto& mine : members) {
    for (const Member& m : mine) {
      std::fprintf(file, "%s %s %s\n", m.key.c_str(), m.name.c_str(), m.state.c_str());
    }
  }
  std::fclose(file);
  return broken.load() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"shardkv-bed-workload: the multi-host bed's workload, sampler and former"};
  app.require_subcommand(1);
  RunFlags f;
  auto* run = app.add_subcommand("run", "Run the recorded workload");
  run->add_option("--seeds", f.seeds, "host:port, comma separated")->delimiter(',')->required();
  run->add_option("--prefix", f.prefix, "This workload's key prefix (one writer per key)");
  run->add_option("--read-prefixes", f.read_prefixes, "Other workloads' prefixes to read too")
      ->delimiter(',');
  run->add_option("--writers", f.writers)->check(CLI::Range(1, 64));
  run->add_option("--readers", f.readers)->check(CLI::Range(0, 64));
  run->add_option("--keys", f.keys, "Keys per writer")->check(CLI::Range(1, 100000));
  run->add_option("--markers", f.markers, "Tombstone-marker keys per writer")
      ->check(CLI::Range(1, 100000));
  run->add_option("--duration-ms", f.duration_ms)->check(CLI::Range(1, 3600000));
  run->add_option("--timeout-ms", f.timeout_ms)->check(CLI::Range(1, 600000));
  run->add_option("--rate", f.rate, "Operations per second per thread")
      ->check(CLI::Range(1, 100000));
  run->add_option("--seed", f.seed);
  run->add_option("--history", f.history, "History file to write")->required();
  run->add_option("--auth-secret-file", f.secret_file, "The cluster secret");
  run->add_flag("--fresh-clients", f.fresh_clients, "A new Client for every write");
  std::string address, out;
  uint32_t id = 0;
  int duration_ms = 10000, interval_ms = 250;
  auto* sample = app.add_subcommand("sample", "Sample one node's epoch and map digest");
  sample->add_option("--node", address)->required();
  sample->add_option("--id", id)->required();
  sample->add_option("--out", out)->required();
  sample->add_option("--duration-ms", duration_ms)->check(CLI::Range(1, 3600000));
  sample->add_option("--auth-secret-file", secret_file, "The cluster secret");
  sample->add_option("--interval-ms", interval_ms)->check(CLI::Range(10, 60000));
  std::vector<std::string> addresses;
  uint32_t replicas = 3;
  auto* form = app.add_subcommand("form", "Form a cluster (Admin::FormCluster)");
  form->add_option("ADDRESSES", addresses)->delimiter(',')->required();
  form->add_option("--auth-secret-file", secret_file, "The cluster secret");
  form->add_option("--replicas", replicas)->check(CLI::Range(1, 7));
  int count = 1000, bytes = 1000;
  auto* load = app.add_subcommand("load", "Write --count keys load.<i>");
  load->add_option("--seeds", addresses)->delimiter(',')->required();
  load->add_option("--auth-secret-file", secret_file, "The cluster secret");
  load->add_option("--count", count)->check(CLI::Range(1, 10000000));
  load->add_option("--bytes", bytes)->check(CLI::Range(1, 1 << 20));
  CountFlags cf;
  auto* count_cmd = app.add_subcommand("count", "Increment counters ctr.<i> from many clients");
  count_cmd->add_option("--seeds", cf.seeds)->delimiter(',')->required();
  count_cmd->add_option("--auth-secret-file", secret_file, "The cluster secret");
  count_cmd->add_option("--clients", cf.clients)->check(CLI::Range(1, 64));
  count_cmd->add_option("--counters", cf.counters)->check(CLI::Range(1, 1000));
  count_cmd->add_option("--duration-ms", cf.duration_ms)->check(CLI::Range(1, 3600000));
  count_cmd->add_option("--timeout-ms", cf.timeout_ms)->check(CLI::Range(1, 600000));
  count_cmd->add_option("--seed", cf.seed);
  count_cmd->add_option("--out", cf.out, "Tally file to write")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (*run) return Run(f);
  if (*sample) return Sample(address, id, out, duration_ms, interval_ms);
  if (*form) return Form(addresses, replicas);
  if (*load) return Load(addresses, count, bytes);
  if (*count_cmd) return Count(cf);
  return 2;
}
