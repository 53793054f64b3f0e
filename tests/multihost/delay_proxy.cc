#include "multihost/delay_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <deque>

namespace shardkv::multihost {
namespace {

using Clock = std::chrono::steady_clock;

sockaddr_in Endpoint(const std::string& ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  return a;
}

// Enters `netns_fd` on the calling thread: sockets it makes from now on live in that namespace
// (a network namespace is per thread).
bool EnterNamespace(int netns_fd) { return setns(netns_fd, CLONE_NEWNET) == 0; }

}  // namespace

StatusOr<std::unique_ptr<DelayProxy>> DelayProxy::Start(
    const std::string& netns, const std::string& listen_ip, uint16_t listen_port,
    const std::string& target_ip, uint16_t target_port, std::chrono::milliseconds delay) {
  std::unique_ptr<DelayProxy> proxy(new DelayProxy);
  proxy->netns_fd_ = open(("/var/run/netns/" + netns).c_str(), O_RDONLY | O_CLOEXEC);
  if (proxy->netns_fd_ < 0) return Status::Unavailable("cannot open namespace " + netns);
  proxy->target_ip_ = target_ip;
  proxy->target_port_ = target_port;
  proxy->delay_ = delay;
  // The listener is made on a thread inside the namespace; this thread stays where it is.
  Status made = Status::OK();
  std::thread([&] {
    if (!EnterNamespace(proxy->netns_fd_)) {
      made = Status::Unavailable("setns " + netns + ": " + std::strerror(errno));
      return;
    }
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a = Endpoint(listen_ip, listen_port);
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(fd, 64) != 0) {
      made = Status::Unavailable("proxy cannot listen on " + listen_ip + ":" +
                                 std::to_string(listen_port) + ": " + std::strerror(errno));
      close(fd);
      return;
    }
    proxy->listen_fd_ = fd;
  }).join();
  if (!made.ok()) return made;
  proxy->acceptor_ = std::thread([p = proxy.get()] { p->AcceptLoop(); });
  return proxy;
}

DelayProxy::~DelayProxy() {
  Stop();
  if (netns_fd_ >= 0) close(netns_fd_);
}

void DelayProxy::Stop() {
  if (stop_.exchange(true)) return;
  if (acceptor_.joinable()) acceptor_.join();
  if (listen_fd_ >= 0) close(listen_fd_);
  std::vector<std::thread> pumps;
  {
    std::lock_guard lock(mu_);
    for (int fd : fds_) shutdown(fd, SHUT_RDWR);  // wakes every pump
    pumps.swap(pumps_);
  }
  for (std::thread& t : pumps) t.join();
  std::lock_guard lock(mu_);
  for (int fd : fds_) close(fd);
  fds_.clear();
}

void DelayProxy::AcceptLoop() {
  if (!EnterNamespace(netns_fd_)) return;
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;  // 100 ms: how soon Stop() is noticed
    const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    const int upstream = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a = Endpoint(target_ip_, target_port_);
    if (connect(upstream, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      close(client);
      close(upstream);
      continue;
    }
    const int one = 1;
    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(upstream, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    ++connections_;
    std::lock_guard lock(mu_);
    fds_.push_back(client);
    fds_.push_back(upstream);
    pumps_.emplace_back([this, client, upstream] { Pump(client, upstream); });
    pumps_.emplace_back([this, client, upstream] { Pump(upstream, client); });
  }
}

void DelayProxy::Pump(int from, int to) {
  // The reader stamps each chunk; the writer sends it `delay_` after its stamp.
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<Clock::time_point, std::string>> queue;
  bool done = false;
  std::thread writer([&] {
    std::unique_lock lock(mu);
    while (true) {
      cv.wait(lock, [&] { return done || !queue.empty(); });
      if (queue.empty()) break;  // done and drained
      auto [stamp, data] = std::move(queue.front());
      queue.pop_front();
      lock.unlock();
      std::this_thread::sleep_until(stamp + delay_);  // the injected latency itself
      for (size_t sent = 0; sent < data.size();) {
        const ssize_t n = send(to, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += static_cast<size_t>(n);
      }
      lock.lock();
    }
    shutdown(to, SHUT_WR);
  });
  char buffer[64 * 1024];
  while (true) {
    const ssize_t n = recv(from, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    std::lock_guard lock(mu);
    queue.emplace_back(Clock::now(), std::string(buffer, static_cast<size_t>(n)));
    cv.notify_one();
  }
  {
    std::lock_guard lock(mu);
    done = true;
  }
  cv.notify_one();
  writer.join();
}

}  // namespace shardkv::multihost
