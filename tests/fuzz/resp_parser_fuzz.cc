// libFuzzer target: arbitrary bytes through RespParser (in arbitrary chunk sizes). Properties
// checked besides "no crash, no sanitizer report":
//   - chunking does not matter: the same stream fed whole yields the same commands and the
//     same final status;
//   - every command re-encodes (as a multibulk, with RespWriter) into bytes that parse back to
//     the same command;
//   - after an error nothing more comes out and nothing stays buffered.
// Small limits (count 64, bulk 4096, line 1024) so the fuzzer reaches them.
//
// Input layout: byte 0 picks the chunk size (1-64) the stream is fed in; the rest is the stream.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "resp/resp_parser.h"
#include "resp/resp_writer.h"

namespace {

using shardkv::resp::ParserLimits;
using shardkv::resp::Protocol;
using shardkv::resp::RespParser;
using shardkv::resp::RespWriter;
using Args = std::vector<std::string>;

ParserLimits FuzzLimits() {
  ParserLimits limits;
  limits.max_multibulk_count = 64;
  limits.max_bulk_bytes = 4096;
  limits.max_inline_bytes = 1024;
  return limits;
}

std::vector<Args> Run(RespParser& parser, std::string_view stream, size_t chunk) {
  std::vector<Args> out;
  Args args;
  for (size_t i = 0; i < stream.size(); i += chunk) {
    parser.Feed(stream.substr(i, chunk));
    while (parser.Next(&args)) {
      if (args.empty()) __builtin_trap();
      out.push_back(args);
    }
  }
  return out;
}

void CheckRoundTrip(const Args& args) {
  std::string encoded;
  RespWriter(&encoded, Protocol::kResp2).BulkArray(args);
  // An inline command's argument count is bounded only by its line length (as in redis), so
  // it may exceed the multibulk count limit: read it back without that limit.
  ParserLimits limits = FuzzLimits();
  limits.max_multibulk_count = 1 << 20;
  RespParser again(limits);
  again.Feed(encoded);
  Args back;
  if (!again.Next(&back) || back != args || again.BufferedBytes() != 0) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = 1 + data[0] % 64;
  const std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);

  RespParser chunked(FuzzLimits());
  const std::vector<Args> commands = Run(chunked, stream, chunk);
  RespParser whole(FuzzLimits());
  const std::vector<Args> whole_commands = Run(whole, stream, stream.size() + 1);
  if (whole_commands != commands) __builtin_trap();
  if (!(whole.status() == chunked.status())) __builtin_trap();

  for (const Args& args : commands) CheckRoundTrip(args);

  if (chunked.poisoned()) {
    Args args;
    chunked.Feed("PING\r\n");
    if (chunked.Next(&args) || chunked.BufferedBytes() != 0 || chunked.MidCommand()) {
      __builtin_trap();
    }
  }
  return 0;
}
