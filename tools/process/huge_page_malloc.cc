#include "huge_page_malloc.h"

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <string_view>

namespace shardkv::process {
namespace {

constexpr std::string_view kTunable = "glibc.malloc.hugetlb";
constexpr char kOptOutEnv[] = "SHARDKV_HUGEPAGE_MALLOC";

}  // namespace

void ReexecWithHugePageMalloc(char** argv) {
  if (const char* opt = std::getenv(kOptOutEnv); opt != nullptr && std::string_view(opt) == "0") {
    return;
  }
  const char* current = std::getenv("GLIBC_TUNABLES");
  std::string tunables = current == nullptr ? "" : current;
  // Set already, by us before the exec or by the user: never exec twice, never override.
  if (tunables.find(kTunable) != std::string::npos) return;
  if (!tunables.empty()) tunables += ':';
  tunables += std::string(kTunable) + "=1";
  if (setenv("GLIBC_TUNABLES", tunables.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  // exec failed (no /proc, say): carry on as we are, without the tunable claimed as set.
  if (current == nullptr) {
    unsetenv("GLIBC_TUNABLES");
  } else {
    setenv("GLIBC_TUNABLES", current, 1);
  }
}

}  // namespace shardkv::process
