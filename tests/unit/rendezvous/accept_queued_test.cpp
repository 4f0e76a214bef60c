// accept_queued over real loopback TCP: every queued connection in one call
// (up to the bound), each with its peer's address and close-on-exec, and an
// empty queue that is not an error.
#include "rendezvous/accept_queued.h"

#include <doctest/doctest.h>
#include <fcntl.h>

#include <asio.hpp>
#include <set>
#include <vector>

using namespace dlaunch;

namespace {

struct Listener {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor{io, {asio::ip::make_address("127.0.0.1"), 0}};
  std::vector<asio::ip::tcp::socket> clients;

  Listener() { acceptor.non_blocking(true); }
  // Connects `n` clients; the kernel queues them on the listener.
  std::set<unsigned short> connect(int n) {
    std::set<unsigned short> ports;
    for (int i = 0; i < n; ++i) {
      clients.emplace_back(io);
      clients.back().connect(acceptor.local_endpoint());
      ports.insert(clients.back().local_endpoint().port());
    }
    return ports;
  }
};

}  // namespace

TEST_CASE("accept_queued takes every queued connection at once, with its peer's address") {
  Listener l;
  const auto ports = l.connect(20);
  std::set<unsigned short> peers;
  std::vector<asio::ip::tcp::socket> taken;
  const auto ec = accept_queued(l.acceptor, 4096, [&](asio::ip::tcp::socket s, const auto& peer) {
    CHECK(peer.address() == asio::ip::make_address("127.0.0.1"));
    peers.insert(peer.port());
    taken.push_back(std::move(s));
  });
  CHECK_FALSE(ec);
  CHECK(taken.size() == 20);
  CHECK(peers == ports);
  // Ranks and agents are forked from the processes that accept: nothing accepted leaks into them.
  for (auto& s : taken) CHECK((::fcntl(s.native_handle(), F_GETFD) & FD_CLOEXEC) != 0);

  // The queue is empty now: no error, nothing taken.
  int more = 0;
  CHECK_FALSE(accept_queued(l.acceptor, 4096, [&](asio::ip::tcp::socket, const auto&) { ++more; }));
  CHECK(more == 0);
}

TEST_CASE("accept_queued takes no more than its bound; the rest wait for the next call") {
  Listener l;
  l.connect(10);
  int first = 0;
  int second = 0;
  std::vector<asio::ip::tcp::socket> keep;
  CHECK_FALSE(accept_queued(l.acceptor, 4, [&](asio::ip::tcp::socket s, const auto&) {
    ++first;
    keep.push_back(std::move(s));
  }));
  CHECK_FALSE(accept_queued(l.acceptor, 100, [&](asio::ip::tcp::socket s, const auto&) {
    ++second;
    keep.push_back(std::move(s));
  }));
  CHECK(first == 4);
  CHECK(second == 6);
}
