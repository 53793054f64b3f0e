// Links the installed library and places a few keys; exits non-zero if anything is off.
#include <shardkv/hash_ring.h>

#include <cstdio>

int main() {
  auto ring = shardkv::HashRing::Build({{"node-a", 1}, {"node-b", 1}, {"node-c", 2}});
  if (!ring.ok()) {
    std::fprintf(stderr, "%s\n", ring.status().ToString().c_str());
    return 1;
  }
  std::vector<uint32_t> replicas;
  shardkv::Status s = (*ring)->Replicas((*ring)->KeyToken("user:42"), 3, &replicas);
  if (!s.ok() || replicas.size() != 3) return 1;
  std::printf("user:42 -> %s\n", (*ring)->nodes()[replicas[0]].name.c_str());
  return 0;
}
