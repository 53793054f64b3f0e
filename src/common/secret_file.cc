#include "shardkv/secret_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace shardkv {
namespace {

bool IsTrailingSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

}  // namespace

StatusOr<SecretFile> LoadSecretFile(const std::string& path, std::string_view what) {
  const std::string who = std::string(what) + " " + path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Status::InvalidArgument(who + ": cannot read the secret file: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::InvalidArgument(who + ": the secret file is not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxSecretFileBytes) {
    return Status::InvalidArgument(who + ": the secret file holds " + std::to_string(st.st_size) +
                                   " bytes; a secret file holds at most " +
                                   std::to_string(kMaxSecretFileBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::InvalidArgument(who + ": cannot read the secret file: " + std::strerror(errno));
  }
  SecretFile out;
  out.secret.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) return Status::InvalidArgument(who + ": reading the secret file failed");
  while (!out.secret.empty() && IsTrailingSpace(out.secret.back())) out.secret.pop_back();
  if (out.secret.size() < kMinSecretBytes) {
    return Status::InvalidArgument(
        who + ": the secret is " + std::to_string(out.secret.size()) +
        " bytes after stripping trailing whitespace; it must be at least " +
        std::to_string(kMinSecretBytes) + " bytes");
  }
  if ((st.st_mode & S_IROTH) != 0) {
    out.warning = who + " is readable by every user (mode " +
                  std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7) +
                  std::to_string(st.st_mode & 7) + "); restrict it with chmod 600";
  }
  return out;
}

}  // namespace shardkv
