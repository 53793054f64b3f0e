#include "placement_command.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "cli_common.h"
#include "placement_lab/comparison.h"
#include "placement_lab/key_set.h"
#include "placement_lab/lab_membership.h"
#include "placement_lab/report_format.h"
#include "placement_lab/svg_report.h"
#include "shardkv/hash.h"
#include "shardkv/placement.h"

namespace shardkv::cli {
namespace {

// Everything `compare` parses; owned by the callback through a shared_ptr because CLI11 binds
// options to addresses that must live as long as the App.
struct CompareFlags {
  std::vector<std::string> algos = {"ring", "jump", "maglev", "rendezvous", "ketama", "modulo"};
  std::vector<int> vnodes = {160};
  std::vector<std::string> hashes = {"xxh3"};
  int nodes = lab::MembershipSpec::kDefaultNodes;
  std::string node_names = lab::MembershipSpec::kDefaultNamePattern;
  std::vector<double> weights;
  double add_weight = 1.0;
  // Signed so that "--keys -5" is reported as such rather than wrapping to 2^64 - 5.
  int64_t keys = lab::KeySpec::kDefaultCount;
  std::string key_pattern;
  bool random_keys = false;
  std::string key_file;
  uint64_t seed = lab::KeySpec::kDefaultSeed;
  uint32_t maglev_table = 65537;
  bool json = false;
  bool csv = false;
  std::string svg;

  // Set after parsing: whether the user gave these (their meaning depends on it).
  bool nodes_given = false;
  bool keys_given = false;
};

StatusOr<lab::CompareOptions> ToCompareOptions(const CompareFlags& f) {
  lab::CompareOptions o;
  for (const std::string& name : f.algos) {
    if (name == "all") {
      o.algorithms.clear();
      break;
    }
    SHARDKV_ASSIGN_OR_RETURN(Algorithm a, ParseAlgorithm(name));
    o.algorithms.push_back(a);
  }
  for (const std::string& name : f.hashes) {
    StatusOr<hash::HashKind> h = hash::ParseHashKind(name);
    if (!h.ok()) return h.status().WithContext("--hash");
    o.hashes.push_back(*h);
  }
  o.vnodes = f.vnodes;
  o.maglev_table_size = f.maglev_table;
  return o;
}

lab::MembershipSpec ToMembershipSpec(const CompareFlags& f) {
  lab::MembershipSpec m;
  m.names = f.node_names;
  if (f.nodes_given || f.node_names.find('%') != std::string::npos) m.count = f.nodes;
  m.weights = f.weights;
  m.added_weight = f.add_weight;
  return m;
}

lab::KeySpec ToKeySpec(const CompareFlags& f) {
  lab::KeySpec k;
  if (!f.key_file.empty()) {
    k.source = lab::KeySpec::Source::kFile;
    k.file = f.key_file;
  } else if (f.random_keys) {
    k.source = lab::KeySpec::Source::kRandom;
  }
  k.pattern = f.key_pattern;
  if (f.keys_given || k.source != lab::KeySpec::Source::kFile) {
    k.count = static_cast<uint64_t>(std::max<int64_t>(f.keys, 0));
  }
  k.seed = f.seed;
  return k;
}

// Redraws one status line on a terminal's stderr.
void ShowProgress(size_t index, size_t total, const lab::Configuration& config) {
  std::fprintf(stderr, "\r\033[K[%zu/%zu] measuring %s ...", index + 1, total,
               config.Label().c_str());
  std::fflush(stderr);
}

int RunCompare(const CompareFlags& flags) {
  if (flags.keys < 1) {
    return ReportError("--keys must be at least 1, got " + std::to_string(flags.keys), kExitUsage);
  }
  StatusOr<lab::CompareOptions> options = ToCompareOptions(flags);
  if (!options.ok()) return ReportError(options.status(), kExitUsage);
  // Expand first so that a bad --vnodes fails before a million keys are generated.
  StatusOr<std::vector<lab::Configuration>> configs = lab::ExpandConfigurations(*options);
  if (!configs.ok()) return ReportError(configs.status(), kExitUsage);
  StatusOr<lab::LabMembership> membership = lab::LabMembership::Build(ToMembershipSpec(flags));
  if (!membership.ok()) return ReportError(membership.status(), kExitUsage);

  if (!flags.svg.empty()) {
    // Fail before measuring, not after: a long run should not end in "cannot write". Opening
    // for append creates the file without truncating anything yet.
    std::ofstream probe(flags.svg, std::ios::app);
    if (!probe) {
      return ReportError("cannot write --svg file '" + flags.svg + "': " + std::strerror(errno),
                         kExitUsage);
    }
  }

  const bool progress = StderrIsTerminal();
  if (progress) std::fputs("generating keys ...", stderr);
  StatusOr<lab::KeySet> keys = lab::KeySet::Generate(ToKeySpec(flags));
  if (progress) std::fputs("\r\033[K", stderr);
  if (!keys.ok()) return ReportError(keys.status(), kExitUsage);

  lab::ProgressFn progress_fn;
  if (progress) progress_fn = ShowProgress;
  StatusOr<lab::CompareReport> report =
      lab::RunComparison(*options, *membership, *keys, progress_fn);
  if (progress) std::fputs("\r\033[K", stderr);
  if (!report.ok()) return ReportError(report.status(), kExitUsage);

  std::string out = flags.json  ? lab::FormatJson(*report)
                    : flags.csv ? lab::FormatCsv(*report)
                                : lab::FormatText(*report);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  if (!flags.svg.empty()) {
    Status written = lab::WriteSvgFile(*report, flags.svg);
    if (!written.ok()) return ReportError(written, kExitUsage);
  }
  return kExitOk;
}

constexpr const char* kCompareDescription =
    "The placement lab: measure placement algorithms on your keys before adopting one.\n"
    "For every configuration (algorithm x vnodes (ring only) x hash) it reports:\n"
    "  uniformity  min and max share of keys, max deviation from the ideal share (pp) and\n"
    "              the standard deviation of the shares (pp);\n"
    "  migration   % of keys that change owner when one node is added (the name pattern's\n"
    "              next index), when the last node is removed and when the middle node\n"
    "              (index N/2) is removed, each with the ideal (the share of that node);\n"
    "  cost        lookup ns/key (hash + owner), build time and memory of the lookup table.\n"
    "Owners are compared by node name, so Jump's renumbering on a middle removal counts.\n"
    "Nodes: node i is named pattern(i) and the added node pattern(N); with a name file, the\n"
    "added node is the line after the N used (else 'new-node'). Weights scale each scheme's\n"
    "share (ring: vnodes x weight; jump: repeated buckets; ketama: whole numbers only).\n"
    "Keys are deterministic: a pattern over 0..K-1, seeded random keys, or a file.\n";

constexpr const char* kCompareFooter =
    "Examples:\n"
    "  shardkv placement compare\n"
    "  shardkv placement compare --algos ring --hash crc32,crc32-fmix32,xxh3,fnv1a \\\n"
    "      --vnodes 1,10,50,100,500           # the seeds' hash x vnodes sweep\n"
    "  shardkv placement compare --algos modulo,jump,maglev,ring --hash crc32 --vnodes 100\n"
    "  shardkv placement compare --key-file keys.txt --nodes 10 \\\n"
    "      --weights 4,2,1,1,1,1,1,1,1,1 --svg lab.svg\n"
    "Exit codes: 0 ok, 2 bad arguments or input (one 'error: ...' line on stderr).";

}  // namespace

void RegisterPlacementCommands(CLI::App& app, int* exit_code) {
  CLI::App* placement =
      app.add_subcommand("placement", "Placement lab: compare consistent-hashing schemes.");
  placement->require_subcommand(1);

  auto flags = std::make_shared<CompareFlags>();
  CLI::App* cmd = placement->add_subcommand(
      "compare", "Uniformity, migration and cost of placement algorithms on given keys.");
  cmd->description(kCompareDescription);
  cmd->footer(kCompareFooter);

  const std::string kAlgo = "Placement";
  const std::string kMembers = "Membership";
  const std::string kKeys = "Keys";
  const std::string kOutput = "Output";

  cmd->add_option("--algos,--algo", flags->algos,
                  "Any of ring,jump,maglev,rendezvous,ketama,modulo; or all")
      ->delimiter(',')
      ->type_name("LIST")
      ->capture_default_str()
      ->group(kAlgo);
  cmd->add_option("--vnodes", flags->vnodes, "Ring vnodes per unit of weight (ring only)")
      ->delimiter(',')
      ->type_name("LIST")
      ->capture_default_str()
      ->group(kAlgo);
  cmd->add_option("--hash,--hashes", flags->hashes,
                  "Any of xxh3,crc32,crc32-fmix32,fnv1a,fnv1a64,md5 (ketama: md5)")
      ->delimiter(',')
      ->type_name("LIST")
      ->capture_default_str()
      ->group(kAlgo);
  cmd->add_option("--maglev-table", flags->maglev_table,
                  "Maglev table size, a prime >= 100 x nodes")
      ->capture_default_str()
      ->group(kAlgo);

  CLI::Option* nodes_opt =
      cmd->add_option("--nodes", flags->nodes,
                      "Node count (with a name FILE: the first N; default all)")
          ->capture_default_str()
          ->group(kMembers);
  cmd->add_option("--node-names", flags->node_names,
                  "Pattern with one integer conversion, or a FILE of names")
      ->type_name("PATTERN|FILE")
      ->capture_default_str()
      ->group(kMembers);
  cmd->add_option("--weights", flags->weights, "One weight per node (default: all 1)")
      ->delimiter(',')
      ->type_name("LIST")
      ->group(kMembers);
  cmd->add_option("--add-weight", flags->add_weight, "Weight of the node the add test adds")
      ->capture_default_str()
      ->group(kMembers);

  CLI::Option* keys_opt =
      cmd->add_option("--keys", flags->keys,
                      "Key count (with --key-file: at most this many; default all)")
          ->capture_default_str()
          ->group(kKeys);
  CLI::Option* pattern_opt =
      cmd->add_option("--key-pattern", flags->key_pattern,
                      "One integer conversion, over 0..K-1 [user:%d; random: sess:%016x]")
          ->type_name("PATTERN")
          ->group(kKeys);
  CLI::Option* random_opt = cmd->add_flag("--random-keys", flags->random_keys,
                                          "Random 64-bit numbers through the pattern (seeded)")
                                ->group(kKeys);
  CLI::Option* file_opt = cmd->add_option("--key-file", flags->key_file,
                                          "Keys from FILE, one per line (empty lines skipped)")
                              ->type_name("FILE")
                              ->group(kKeys);
  cmd->add_option("--seed", flags->seed, "Seed of --random-keys")
      ->capture_default_str()
      ->needs(random_opt)
      ->group(kKeys);
  file_opt->excludes(random_opt)->excludes(pattern_opt);

  CLI::Option* json_opt =
      cmd->add_flag("--json", flags->json, "Print JSON instead of a table")->group(kOutput);
  CLI::Option* csv_opt =
      cmd->add_flag("--csv", flags->csv, "Print CSV instead of a table")->group(kOutput);
  json_opt->excludes(csv_opt);
  cmd->add_option("--svg", flags->svg, "Also write charts: shares, keys moved vs ideal, the ring")
      ->type_name("FILE")
      ->group(kOutput);

  cmd->callback([flags, exit_code, nodes_opt, keys_opt] {
    flags->nodes_given = nodes_opt->count() > 0;
    flags->keys_given = keys_opt->count() > 0;
    *exit_code = RunCompare(*flags);
  });
}

}  // namespace shardkv::cli
