#include "tools/fake_node.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "net/codec.h"
#include "net/messages.h"
#include "shardkv/cluster_map.h"

namespace shardkv::testing {
namespace {

int ListenLoopback(uint16_t* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) std::abort();
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) std::abort();
  if (::listen(fd, 16) != 0) std::abort();
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

void WriteAll(int fd, const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;  // the client went away: nothing to answer
    off += static_cast<size_t>(n);
  }
}

}  // namespace

uint16_t ClosedPort() {
  uint16_t port = 0;
  ::close(ListenLoopback(&port));
  return port;
}

FakeNode::FakeNode(Mode mode) : mode_(mode) {
  uint16_t port = 0;
  listen_fd_ = ListenLoopback(&port);
  address_ = "127.0.0.1:" + std::to_string(port);
  ClusterParams p;
  p.replication_factor = p.write_quorum = p.read_quorum = 1;
  auto map = ClusterMap::Create(0x5eed, p, {{1, address_, 1.0, NodeState::kUp}}, 1);
  if (!map.ok()) std::abort();
  map_ = map->Encode();
  thread_ = std::thread([this] { Serve(); });
}

FakeNode::~FakeNode() {
  stop_ = true;
  thread_.join();
  ::close(listen_fd_);
}

void FakeNode::Serve() {
  std::map<int, std::string> conns;  // fd -> bytes read and not yet decoded
  while (!stop_) {
    std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}};
    for (const auto& [fd, buf] : conns) fds.push_back({fd, POLLIN, 0});
    // Bounded wait, so the destructor's stop_ is seen; readiness, not time, drives the work.
    if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
    if (fds[0].revents & POLLIN) {
      const int c = ::accept(listen_fd_, nullptr, nullptr);
      if (c >= 0) conns[c];
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      const int fd = fds[i].fd;
      char chunk[4096];
      const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
      if (n <= 0) {
        ::close(fd);
        conns.erase(fd);
        continue;
      }
      std::string& buf = conns[fd];
      buf.append(chunk, static_cast<size_t>(n));
      // Frames: a 4-byte little-endian length, then one request.
      while (buf.size() >= 4) {
        uint32_t len = 0;
        for (int b = 3; b >= 0; --b) len = (len << 8) | static_cast<unsigned char>(buf[b]);
        if (buf.size() < 4 + size_t{len}) break;
        auto request = net::DecodeRequest(std::string_view(buf).substr(4, len));
        buf.erase(0, 4 + size_t{len});
        if (!request.ok()) continue;
        net::Response response;
        response.id = request->id;
        response.epoch = 1;
        const bool write = std::holds_alternative<net::PutRequest>(request->body) ||
                           std::holds_alternative<net::DeleteRequest>(request->body);
        if (write) {
          ++writes_;
          if (mode_ == Mode::kSilent) continue;
          if (mode_ == Mode::kRefuse) {
            response.body = net::ErrorResponse{Status::Code::kFailedPrecondition,
                                               "node 1 refuses writes (test)"};
          } else if (std::holds_alternative<net::PutRequest>(request->body)) {
            response.body = net::PutResponse{42};
          } else {
            response.body = net::DeleteResponse{42};
          }
        } else if (std::holds_alternative<net::GetClusterMapRequest>(request->body)) {
          response.body = net::GetClusterMapResponse{map_};
        } else if (std::holds_alternative<net::GetRequest>(request->body)) {
          response.body = net::GetResponse{};  // not found
        } else {
          response.body = net::ErrorResponse{Status::Code::kNotSupported, "not in the fake"};
        }
        std::string frame;
        if (net::EncodeResponse(response, &frame).ok()) WriteAll(fd, frame);
      }
    }
  }
  for (const auto& [fd, buf] : conns) ::close(fd);
}

}  // namespace shardkv::testing
