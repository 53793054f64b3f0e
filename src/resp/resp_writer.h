// RespWriter: encodes replies in RESP2 or RESP3, appending to a caller's std::string.
//
// Used by the Redis front end (src/redis; design.md "RESP codec (groundwork)"). The
// protocol version is a constructor parameter because a connection switches with HELLO 3,
// and the same reply code must serve both: as redis-server does, RESP3-only types degrade in
// RESP2 to the nearest RESP2 type:
//
//   call                 RESP3                        RESP2
//   Null()               "_\r\n"                      "$-1\r\n"
//   NullArray()          "_\r\n"                      "*-1\r\n"
//   MapHeader(n)         "%<n>\r\n"                   "*<2n>\r\n" (keys and values alternate)
//   SetHeader(n)         "~<n>\r\n"                   "*<n>\r\n"
//   Double(d)            ",<d>\r\n"                   bulk string of <d>
//   Boolean(b)           "#t\r\n" / "#f\r\n"          ":1\r\n" / ":0\r\n"
//   Verbatim(text, fmt)  "=<len>\r\n<fmt>:<text>\r\n"  bulk string of <text>
//
// Aggregates are count-first: write the header, then exactly that many elements (twice that
// for a map), each with any call of this class, nested aggregates included. The writer does
// not check the count; a wrong count desynchronises the client.
//
// Doubles are printed as redis 7.2+ does: an integral value below 2^52 as an integer, "inf",
// "-inf", "nan", "-0", otherwise the shortest text that reads back to the same double.
//
// Thread-safety: a writer is a view on its buffer; use one per buffer and thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace shardkv::resp {

enum class Protocol : int { kResp2 = 2, kResp3 = 3 };

class RespWriter {
 public:
  // `out` must outlive the writer; replies are appended to it.
  RespWriter(std::string* out, Protocol protocol) : out_(out), protocol_(protocol) {}

  Protocol protocol() const { return protocol_; }

  // "+<s>\r\n". A CR or LF in `s` (which RESP cannot carry there) is written as a space.
  void SimpleString(std::string_view s);
  // "-<message>\r\n". As redis's addReplyError: a message not starting with '-' gets the
  // "ERR " code prepended ("-ERR <message>"); one starting with '-' carries its own code
  // ("-WRONGTYPE ..."). CR and LF become spaces.
  void Error(std::string_view message);
  void Integer(int64_t value);
  void Bulk(std::string_view bytes);
  void Null();
  void NullArray();
  void ArrayHeader(size_t count);
  void MapHeader(size_t pairs);
  void SetHeader(size_t count);
  void Double(double value);
  void Boolean(bool value);
  // `format` is the three-letter type ("txt", "mkd"); anything else is written as "txt".
  void Verbatim(std::string_view text, std::string_view format = "txt");

  // Convenience: an array of bulk strings.
  template <typename Range>
  void BulkArray(const Range& items) {
    ArrayHeader(std::size(items));
    for (const auto& item : items) Bulk(item);
  }

 private:
  void Line(char type, std::string_view body);  // "<type><body>\r\n", CR/LF made spaces
  void Length(char type, int64_t n);            // "<type><n>\r\n"
  bool resp3() const { return protocol_ == Protocol::kResp3; }

  std::string* out_;
  Protocol protocol_;
};

// The text of a double as in a RESP3 double or the RESP2 bulk (see the file comment).
std::string FormatDouble(double value);

}  // namespace shardkv::resp
