#include "redis/redis_commands.h"

#include <fnmatch.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <map>
#include <optional>
#include <set>

#include "redis/ascii_case.h"
#include "redis/command_routes.h"
#include "redis/command_table.h"
#include "resp/resp_writer.h"
#include "shardkv/options.h"

namespace shardkv::redis {
namespace {

// Redis refuses client and library names with spaces or characters outside '!'..'~'.
bool ValidName(const std::string& name) {
  for (char c : name) {
    if (c < '!' || c > '~') return false;
  }
  return true;
}

bool SecretsEqual(const std::string& a, const std::string& b) {
  // Constant time in the secret's length, so a wrong password's timing says nothing.
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

constexpr char kWrongPass[] = "-WRONGPASS invalid username-password pair or user is disabled.";
constexpr char kBadName[] = "Client names cannot contain spaces, newlines or special characters.";

}  // namespace

namespace {

std::string ArityError(const std::string& name) {
  return Err("wrong number of arguments for '" + name + "' command");
}

// A pipelining client (redis-py's pipeline(), go-redis's TxPipeline) sends MULTI, its commands
// and EXEC in one go and reads the replies after. Once MULTI is refused, none of those commands
// may run, or a client that sees its transaction fail would find part of it applied. So the
// connection stays in a refused transaction until EXEC (which fails with redis-server's own
// EXECABORT reply, so clients raise the first error, MULTI's) or DISCARD; inside it every command
// is answered as below and not run, except QUIT and RESET (which redis-server runs inside a
// transaction too, RESET ending it). Nested MULTI and WATCH get redis-server's replies.
constexpr char kNotRun[] =
    "-EXECABORT MULTI was refused (shardkv has no multi-key transactions): this command is not "
    "run, nor any other until EXEC or DISCARD\r\n";
constexpr char kExecAbort[] = "-EXECABORT Transaction discarded because of previous errors.\r\n";

// The reply of `name` inside a refused transaction; nullopt for QUIT and RESET (run as usual).
std::optional<std::string> InRefusedTransaction(RedisSession& session, const std::string& name,
                                                const Args& args) {
  if (name == "quit" || name == "reset") return std::nullopt;
  const bool control = name == "exec" || name == "discard" || name == "multi" || name == "watch";
  if (!control) return kNotRun;
  if (!RefusedArityOk(*FindRow(name), args.size())) return ArityError(name);
  if (name == "multi") return Err("MULTI calls can not be nested");
  if (name == "watch") return Err("WATCH inside MULTI is not allowed");
  session.set_in_refused_transaction(false);
  return name == "exec" ? kExecAbort : "+OK\r\n";
}

}  // namespace

std::string RefusalReason(const std::string& name) {
  const CommandRow* row = FindRow(name);
  return row != nullptr && row->handler == Handler::kRefused ? row->refusal : "";
}

std::vector<std::string> RefusedCommands() {
  std::vector<std::string> out;
  for (const CommandRow* row : CommandRows()) {
    if (row->handler == Handler::kRefused) out.push_back(row->name);
  }
  return out;
}

struct RedisCommands::Runner {
  std::shared_ptr<RedisSession> session;
  std::vector<Args> commands;
  size_t next = 0;
  std::string out;
  bool close = false;
  std::function<void(std::string, bool)> done;
};

void RedisCommands::Run(std::shared_ptr<RedisSession> session, std::vector<Args> commands,
                        std::function<void(std::string, bool)> done) {
  auto runner = std::make_shared<Runner>();
  runner->session = std::move(session);
  runner->commands = std::move(commands);
  runner->done = std::move(done);
  Loop(runner);
}

void RedisCommands::Loop(const std::shared_ptr<Runner>& r) {
  while (r->next < r->commands.size() && !r->close) {
    // Whoever arrives second (this loop, or the step's completion) continues.
    auto arrivals = std::make_shared<std::atomic<int>>(0);
    Step(r, [this, r, arrivals] {
      if (arrivals->fetch_add(1) == 1) Loop(r);
    });
    if (arrivals->fetch_add(1) == 0) return;
  }
  auto done = std::move(r->done);
  done(std::move(r->out), r->close);
}

void RedisCommands::Step(const std::shared_ptr<Runner>& r, std::function<void()> next) {
  RedisSession& session = *r->session;
  const Args& args = r->commands[r->next];
  auto reply = [r, next](std::string bytes) {
    r->out += bytes;
    ++r->next;
    next();
  };
  if (c_->counters != nullptr) c_->counters->commands_processed.fetch_add(1);
  const std::string name = Lower(args[0]);
  if (session.in_refused_transaction()) {
    if (auto answer = InRefusedTransaction(session, name, args)) return reply(std::move(*answer));
  }
  // One lookup decides: refused (with the reason), unknown, or the group that runs it.
  const CommandRow* row = FindRow(name);
  if (row != nullptr && row->handler == Handler::kRefused) {
    if (!RefusedArityOk(*row, args.size())) return reply(ArityError(name));
    if (name == "multi") session.set_in_refused_transaction(true);
    return reply(Err(row->refusal));
  }
  const CommandSpec* spec = row != nullptr ? row->spec : nullptr;
  if (spec == nullptr) {
    std::string text =
        "unknown command '" + args[0].substr(0, 128) + "', with args beginning with: ";
    for (size_t i = 1; i < args.size() && text.size() < 1024; ++i) {
      text += "'" + args[i].substr(0, 128) + "' ";
    }
    return reply(Err(text));
  }
  if (!Subcommands(spec->name).empty() && args.size() >= 2) {
    const CommandSpec* sub = FindCommand(name + "|" + Lower(args[1]));
    if (sub == nullptr) {
      return reply(Err("unknown subcommand '" + args[1].substr(0, 128) + "'. Try " + Upper(name) +
                       " HELP."));
    }
    spec = sub;
  }
  if (!spec->ArityOk(args.size())) {
    return reply(Err("wrong number of arguments for '" + std::string(spec->name) + "' command"));
  }
  if (!session.authenticated() && !spec->HasFlag("no_auth")) {
    return reply("-NOAUTH Authentication required.\r\n");
  }
  session.NoteCommand(std::string(spec->name));
  // A run of GETs, or of plain SETs, is one multiGet or multiPut.
  auto same = [&](size_t i, const char* cmd, size_t argc) {
    return r->commands[i].size() == argc && Lower(r->commands[i][0]) == cmd;
  };
  if (name == "get" || (row->handler == Handler::kSet && args.size() == 3)) {
    const bool get = name == "get";
    size_t end = r->next + 1;
    while (end < r->commands.size() && same(end, get ? "get" : "set", get ? 2 : 3)) ++end;
    const size_t count = end - r->next;
    if (c_->counters != nullptr) c_->counters->commands_processed.fetch_add(count - 1);
    auto finish = [r, count, next](std::vector<std::string> replies) {
      for (const std::string& one : replies) r->out += one;
      r->next += count;
      next();
    };
    if (get) {
      std::vector<std::string> keys;
      for (size_t i = r->next; i < end; ++i) keys.push_back(r->commands[i][1]);
      return keys_.GetBatch(session, std::move(keys), std::move(finish));
    }
    std::vector<std::pair<std::string, std::string>> kv;
    for (size_t i = r->next; i < end; ++i) kv.emplace_back(r->commands[i][1], r->commands[i][2]);
    return keys_.SetBatch(session, std::move(kv), std::move(finish));
  }
  auto answer = [reply](std::string bytes) { reply(std::move(bytes)); };
  switch (row->handler) {
    case Handler::kSet:
      if (ExpireCommands::SetTakesExpiry(args)) return expire_.Handle(session, args, answer);
      return keys_.Handle(session, args, answer);
    case Handler::kKeys:
      return keys_.Handle(session, args, answer);
    case Handler::kExpire:
      return expire_.Handle(session, args, answer);
    case Handler::kScan:
      return scans_.Handle(session, args, answer);
    case Handler::kRmw:
      return rmw_.Handle(session, args, answer);
    case Handler::kCounter:
      return counters_.Handle(session, args, answer);
    case Handler::kHash:
      return hashes_.Handle(session, args, answer);
    case Handler::kSets:
      return sets_.Handle(session, args, answer);
    case Handler::kCluster:
      return cluster_.Handle(session, args, answer);
    case Handler::kConnection:
    case Handler::kRefused:  // (answered above)
      break;
  }
  std::string out;
  bool close = false;
  if (!Local(session, args, &out, &close)) out = Err("command not implemented");
  if (close) r->close = true;
  reply(std::move(out));
}

bool RedisCommands::CheckPassword(const std::string& user, const std::string& password,
                                  std::string* out) {
  if (user == "default" && (c_->auth_secret.empty() || SecretsEqual(password, c_->auth_secret))) {
    return true;
  }
  *out = std::string(kWrongPass) + "\r\n";
  return false;
}

bool RedisCommands::Local(RedisSession& session, const Args& args, std::string* out, bool* close) {
  const std::string name = Lower(args[0]);
  resp::RespWriter w(out, session.protocol());
  if (name == "ping") {
    if (args.size() > 2) {
      w.Error("wrong number of arguments for 'ping' command");
    } else if (args.size() == 2) {
      w.Bulk(args[1]);
    } else {
      w.SimpleString("PONG");
    }
  } else if (name == "echo") {
    w.Bulk(args[1]);
  } else if (name == "hello") {
    Hello(session, args, out);
  } else if (name == "auth") {
    if (args.size() > 3) {
      w.Error("syntax error");
    } else if (c_->auth_secret.empty() && args.size() == 2) {
      w.Error(
          "AUTH <password> called without any password configured for the default user. Are "
          "you sure your configuration is correct?");
    } else if (CheckPassword(args.size() == 3 ? args[1] : "default", args.back(), out)) {
      session.set_authenticated(true);
      w.SimpleString("OK");
    }
  } else if (name == "select") {
    int64_t db = 0;
    if (!ParseInt(args[1], &db)) {
      w.Error("value is not an integer or out of range");
    } else if (db != 0) {
      w.Error("DB index is out of range");
    } else {
      w.SimpleString("OK");
    }
  } else if (name == "quit") {
    w.SimpleString("OK");
    *close = true;
  } else if (name == "reset") {
    session.Reset();
    w.SimpleString("RESET");
  } else if (name == "client") {
    Client(session, args, out);
  } else if (name == "command") {
    Command(session, args, out);
  } else if (name == "config") {
    Config(session, args, out);
  } else if (name == "function") {
    // shardkv has no functions, so there is never anything to flush; clients and test
    // harnesses (Redis's own) send FUNCTION FLUSH to start from a clean server.
    const std::string mode = args.size() == 3 ? Lower(args[2]) : "";
    if (args.size() > 3) {
      w.Error("unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION HELP.");
    } else if (!mode.empty() && mode != "async" && mode != "sync") {
      w.Error("FUNCTION FLUSH only supports SYNC|ASYNC option");
    } else {
      w.SimpleString("OK");
    }
  } else if (name == "time") {
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
    w.ArrayHeader(2);
    w.Bulk(std::to_string(us / 1000000));
    w.Bulk(std::to_string(us % 1000000));
  } else if (name == "shardkv") {
    if (Lower(args[1]) != "consistency" || args.size() > 3) {
      w.Error("unknown subcommand '" + args[1].substr(0, 128) +
              "'. Try SHARDKV CONSISTENCY [one|quorum|all|default].");
    } else if (args.size() == 2) {
      w.Bulk(ConsistencyName(session.consistency()));
    } else if (Lower(args[2]) == "default") {
      session.set_consistency(net::Consistency::kDefault);
      w.SimpleString("OK");
    } else {
      auto level = ParseConsistency(Lower(args[2]));
      if (!level.ok()) {
        w.Error("unknown consistency level '" + args[2].substr(0, 128) +
                "': use one, quorum, all or default");
      } else {
        session.set_consistency(*level);
        w.SimpleString("OK");
      }
    }
  } else {
    return false;
  }
  return true;
}

void RedisCommands::Hello(RedisSession& session, const Args& args, std::string* out) {
  resp::RespWriter err(out, resp::Protocol::kResp2);
  int64_t version = static_cast<int64_t>(session.protocol());
  if (args.size() >= 2) {
    if (!ParseInt(args[1], &version)) {
      return err.Error("Protocol version is not an integer or out of range");
    }
    if (version != 2 && version != 3) return err.Error("-NOPROTO unsupported protocol version");
  }
  std::string user, password, name;
  bool auth = false, setname = false;
  for (size_t i = 2; i < args.size(); ++i) {
    const std::string opt = Lower(args[i]);
    if (opt == "auth" && i + 2 < args.size()) {
      auth = true;
      user = args[i + 1];
      password = args[i + 2];
      i += 2;
    } else if (opt == "setname" && i + 1 < args.size()) {
      setname = true;
      name = args[++i];
    } else {
      return err.Error("Syntax error in HELLO option '" + args[i].substr(0, 128) + "'");
    }
  }
  if (auth) {
    if (!CheckPassword(user, password, out)) return;
    session.set_authenticated(true);
  }
  if (!session.authenticated()) {
    return err.Error(
        "-NOAUTH HELLO must be called with the client already authenticated, otherwise the "
        "HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and "
        "select the RESP protocol version at the same time");
  }
  if (setname) {
    if (!ValidName(name)) return err.Error(kBadName);
    session.set_name(name);
  }
  session.set_protocol(static_cast<resp::Protocol>(version));
  resp::RespWriter w(out, session.protocol());
  w.MapHeader(7);
  w.Bulk("server");
  w.Bulk("redis");
  w.Bulk("version");
  w.Bulk(kRedisCompatVersion);
  w.Bulk("proto");
  w.Integer(version);
  w.Bulk("id");
  w.Integer(static_cast<int64_t>(session.id()));
  w.Bulk("mode");
  w.Bulk("standalone");
  w.Bulk("role");
  w.Bulk("master");
  w.Bulk("modules");
  w.ArrayHeader(0);
}

void RedisCommands::Client(RedisSession& session, const Args& args, std::string* out) {
  resp::RespWriter w(out, session.protocol());
  const std::string sub = Lower(args[1]);
  if (sub == "setname") {
    if (!ValidName(args[2])) return w.Error(kBadName);
    session.set_name(args[2]);
    w.SimpleString("OK");
  } else if (sub == "getname") {
    const std::string name = session.name();
    name.empty() ? w.Null() : w.Bulk(name);
  } else if (sub == "id") {
    w.Integer(static_cast<int64_t>(session.id()));
  } else if (sub == "setinfo") {
    const std::string attr = Lower(args[2]);
    if (attr != "lib-name" && attr != "lib-ver") {
      return w.Error("Unrecognized option '" + args[2].substr(0, 128) + "'");
    }
    if (!ValidName(args[3])) {
      return w.Error(attr + " cannot contain spaces, newlines or special characters.");
    }
    session.set_lib(attr == "lib-ver", args[3]);
    w.SimpleString("OK");
  } else if (sub == "info") {
    w.Verbatim(session.InfoLine() + "\n");
  } else {  // list
    if (args.size() > 2 &&
        !(args.size() == 4 && Lower(args[2]) == "type" && Lower(args[3]) == "normal")) {
      return w.Error("syntax error");
    }
    std::string text;
    const std::vector<std::string> lines =
        c_->client_list ? c_->client_list() : std::vector<std::string>{session.InfoLine()};
    for (const std::string& line : lines) text += line + "\n";
    w.Verbatim(text);
  }
}

void RedisCommands::Command(const RedisSession& session, const Args& args, std::string* out) {
  resp::RespWriter w(out, session.protocol());
  const std::string sub = args.size() >= 2 ? Lower(args[1]) : "";
  if (sub.empty() || (sub == "info" && args.size() == 2)) {
    const auto all = TopLevelCommands();
    w.ArrayHeader(all.size());
    for (const CommandSpec* spec : all) WriteCommandInfo(*spec, &w);
  } else if (sub == "count") {
    w.Integer(static_cast<int64_t>(TopLevelCommands().size()));
  } else if (sub == "info") {
    w.ArrayHeader(args.size() - 2);
    for (size_t i = 2; i < args.size(); ++i) {
      const CommandSpec* spec = FindCommand(args[i]);
      spec != nullptr ? WriteCommandInfo(*spec, &w) : w.Null();
    }
  } else {  // docs
    std::vector<const CommandSpec*> specs;
    if (args.size() == 2) specs = TopLevelCommands();
    for (size_t i = 2; i < args.size(); ++i) {
      if (const CommandSpec* spec = FindCommand(args[i])) specs.push_back(spec);
    }
    w.MapHeader(specs.size());
    for (const CommandSpec* spec : specs) WriteCommandDocs(*spec, &w);
  }
}

void RedisCommands::Config(const RedisSession& session, const Args& args, std::string* out) {
  if (Lower(args[1]) == "set") {
    // Only the encoding thresholds (hash-max-listpack-entries, set-max-intset-entries, ...), which
    // test harnesses (Redis's own suite) set: accepted and ignored, since shardkv has no compact
    // encodings to tune. Anything else would change nothing here either, so it is refused.
    resp::RespWriter w(out, session.protocol());
    if (args.size() < 4 || args.size() % 2 != 0) {
      w.Error("wrong number of arguments for 'config|set' command");
      return;
    }
    for (size_t i = 2; i + 1 < args.size(); i += 2) {
      const std::string key = Lower(args[i]);
      const bool encoding = fnmatch("*-max-*-entries", key.c_str(), 0) == 0 ||
                            fnmatch("*-max-*-value", key.c_str(), 0) == 0 ||
                            fnmatch("list-max-*-size", key.c_str(), 0) == 0;
      if (!encoding) {
        w.Error("Unknown option or number of arguments for CONFIG SET - '" +
                args[i].substr(0, 128) + "'");
        return;
      }
    }
    w.SimpleString("OK");
    return;
  }
  // What clients and tools ask at connect (redis-benchmark: save, appendonly): shardkv's
  // answers in Redis's terms. Persistence is RocksDB's WAL, not RDB or AOF.
  const std::string port = c_->redis_address.substr(c_->redis_address.rfind(':') + 1);
  const std::vector<std::pair<std::string, std::string>> params = {
      {"appendonly", "no"},
      {"bind", c_->redis_address.substr(0, c_->redis_address.rfind(':'))},
      {"cluster-enabled", "yes"},
      {"databases", "1"},
      {"maxclients", "10000"},
      {"maxmemory", "0"},
      {"maxmemory-policy", "noeviction"},
      {"port", port},
      {"save", ""},
      {"timeout", "0"}};
  std::vector<std::pair<std::string, std::string>> hits;
  for (const auto& [key, value] : params) {
    for (size_t i = 2; i < args.size(); ++i) {
      if (fnmatch(Lower(args[i]).c_str(), key.c_str(), 0) == 0) {
        hits.emplace_back(key, value);
        break;
      }
    }
  }
  resp::RespWriter w(out, session.protocol());
  w.MapHeader(hits.size());
  for (const auto& [key, value] : hits) {
    w.Bulk(key);
    w.Bulk(value);
  }
}

}  // namespace shardkv::redis
