// The rendezvous server and clients over real loopback TCP, on two threads with
// separate io_contexts (this is what the TSan build exercises).
#include <doctest/doctest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "rendezvous/client.h"
#include "rendezvous/server.h"
#include "rendezvous/state.h"

using namespace dlaunch;

namespace {

struct ServerHarness {
  asio::io_context io;
  std::optional<RendezvousState> state;
  std::unique_ptr<RendezvousServer> server;
  std::thread thread;
  std::atomic<int> joined{0};
  std::atomic<int> lines{0};

  ServerHarness(int nnodes, std::string secret) {
    state.emplace(RendezvousState::Config{nnodes, "job", 0, "127.0.0.1", 0, {}});
    server = std::make_unique<RendezvousServer>(
        io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0), std::move(secret),
        RendezvousServer::Callbacks{[this](ConnId c, const proto::Join& j) {
                                      ++joined;
                                      for (auto& o : state->on_join(c, j))
                                        server->send(o.to, o.message);
                                    },
                                    [this](ConnId c, proto::Message&& m) {
                                      if (auto* l = std::get_if<proto::LogLine>(&m)) {
                                        if (state->owns_rank(c, l->rank)) ++lines;
                                      }
                                    },
                                    [](ConnId, const std::string&) {}},
        RendezvousServer::Options{});
    thread = std::thread([this] { io.run(); });
  }
  ~ServerHarness() {
    asio::post(io, [this] { server->stop(); });
    io.stop();
    thread.join();
  }
};

}  // namespace

TEST_CASE("many agents join over TCP, get assignments, and send lines; a wrong secret is refused") {
  constexpr int kAgents = 50;
  ServerHarness harness(kAgents, "right");
  const auto port = harness.server->port();

  asio::io_context io;
  std::vector<std::unique_ptr<RendezvousClient>> clients;
  clients.reserve(kAgents + 1);  // callbacks keep pointers to the slots
  std::mutex mutex;
  std::vector<proto::Assign> assigns;
  std::string refused;
  for (int i = 0; i < kAgents + 1; ++i) {
    const bool intruder = i == kAgents;
    proto::Join join;
    join.node_rank = intruder ? 0 : i;
    join.nproc = 2;
    join.host = "h" + std::to_string(i);
    join.master_port = 1000 + i;
    RendezvousClient::Options options{"127.0.0.1", port, std::chrono::seconds(10),
                                      std::chrono::seconds(15)};
    auto* slot = &clients.emplace_back();
    *slot = std::make_unique<RendezvousClient>(
        io, options, intruder ? "wrong" : "right", join,
        RendezvousClient::Callbacks{
            [] {},
            [&, slot](proto::Message&& m) {
              if (auto* a = std::get_if<proto::Assign>(&m)) {
                (*slot)->send(proto::LogLine{a->rank_offset, proto::Stream::out, "hi"});
                (*slot)->send(proto::LogLine{a->rank_offset + 5000, proto::Stream::out, "forged"});
                std::lock_guard lock(mutex);
                assigns.push_back(*a);
              }
            },
            [&](const std::string& reason) {
              std::lock_guard lock(mutex);
              refused += reason;
            }});
    (*slot)->start();
  }
  std::thread client_thread([&] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      io.run_for(std::chrono::milliseconds(20));
      std::lock_guard lock(mutex);
      if (static_cast<int>(assigns.size()) == kAgents && !refused.empty() &&
          harness.lines.load() == kAgents) {
        break;
      }
    }
  });
  client_thread.join();
  std::lock_guard lock(mutex);
  CHECK(assigns.size() == kAgents);
  CHECK(harness.joined.load() == kAgents);
  CHECK(harness.lines.load() == kAgents);  // the forged ranks were not counted
  CHECK(refused.find("wrong job secret") != std::string::npos);
  std::set<int> offsets;
  for (const auto& a : assigns) {
    CHECK(a.world_size == 2 * kAgents);
    CHECK(a.master_port == 1000);
    offsets.insert(a.rank_offset);
  }
  CHECK(offsets.size() == kAgents);
  for (auto& c : clients) c->close("done");
  io.run_for(std::chrono::milliseconds(50));
}

// A server sharing its listener with others (rendezvous relays) takes at most
// max_sessions connections; the next one waits in the kernel's queue, for
// whichever process has room, here this one once a connection closes.
TEST_CASE("a server at max_sessions leaves the next connection queued until one closes") {
  asio::io_context io;
  RendezvousServer::Options options;
  options.max_sessions = 2;
  RendezvousServer server(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0),
                          "secret", RendezvousServer::Callbacks{}, options);
  const asio::ip::tcp::endpoint at(asio::ip::make_address("127.0.0.1"), server.port());
  const std::string hello = proto::encode(
      proto::Hello{proto::kMagic, proto::kVersion, std::string(proto::kNonceSize, 'n')});
  // Whether the server answered a Hello on `s` (it does once it accepted s):
  // waits for the answer up to 10 s, so that a slow machine is not taken for
  // a refusal.
  auto answered = [&io](asio::ip::tcp::socket& s) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (s.available() == 0 && std::chrono::steady_clock::now() < give_up)
      io.run_for(std::chrono::milliseconds(10));
    return s.available() > 0;
  };
  // The third is not accepted while two are held: nothing comes in the time
  // the first two took to be answered, and a while after. (An answer that
  // comes later still would pass this by; the answer after a close below
  // shows it was waiting.)
  auto unanswered = [&io](asio::ip::tcp::socket& s) {
    io.run_for(std::chrono::milliseconds(200));
    return s.available() == 0;
  };
  std::vector<asio::ip::tcp::socket> peers;
  for (int i = 0; i < 3; ++i) {
    auto& s = peers.emplace_back(io);
    s.connect(at);
    asio::write(s, asio::buffer(hello));
  }
  CHECK(answered(peers[0]));
  CHECK(answered(peers[1]));
  CHECK(unanswered(peers[2]));
  peers[0].close();
  CHECK(answered(peers[2]));
  server.stop();
}

TEST_CASE("evicting when full: a new connection takes the place of the oldest handshake") {
  asio::io_context io;
  RendezvousServer::Options options;
  options.max_sessions = 2;
  options.evict_when_full = true;
  RendezvousServer server(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0),
                          "secret", RendezvousServer::Callbacks{}, options);
  const asio::ip::tcp::endpoint at(asio::ip::make_address("127.0.0.1"), server.port());
  std::vector<asio::ip::tcp::socket> peers;
  for (int i = 0; i < 3; ++i) {
    peers.emplace_back(io).connect(at);
    io.run_for(std::chrono::milliseconds(100));
  }
  // Every one of them was accepted; the first, silent the longest, is closed.
  const std::string hello = proto::encode(
      proto::Hello{proto::kMagic, proto::kVersion, std::string(proto::kNonceSize, 'n')});
  asio::write(peers[2], asio::buffer(hello));
  io.run_for(std::chrono::milliseconds(100));
  CHECK(peers[2].available() > 0);
  char byte = 0;
  asio::error_code ec;
  peers[0].read_some(asio::buffer(&byte, 1), ec);
  CHECK(ec == asio::error::eof);
  server.stop();
}

TEST_CASE("a handshake has one deadline from connect: heartbeats do not stretch it") {
  asio::io_context io;
  RendezvousServer::Options options;
  options.handshake_timeout = std::chrono::milliseconds(400);
  RendezvousServer server(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0),
                          "secret", RendezvousServer::Callbacks{}, options);
  asio::ip::tcp::socket peer(io);
  peer.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), server.port()));
  const std::string heartbeat = proto::encode(proto::Heartbeat{});
  const auto connected = std::chrono::steady_clock::now();
  asio::error_code ec;
  // A heartbeat every 100 ms kept a silence timeout from ever firing.
  while (!ec && std::chrono::steady_clock::now() - connected < std::chrono::seconds(5)) {
    asio::write(peer, asio::buffer(heartbeat), ec);
    io.run_for(std::chrono::milliseconds(100));
  }
  CHECK(ec);  // closed by the server: writes fail
  server.stop();
}
