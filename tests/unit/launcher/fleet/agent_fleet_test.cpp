// AgentFleet's listen: the one message a job and a check give when the
// rendezvous cannot listen.
#include "launcher/fleet/agent_fleet.h"

#include <doctest/doctest.h>

#include <string>

using namespace dlaunch;

namespace {

struct Fleet {
  explicit Fleet(const std::string& bind, int port)
      : transports([] { return std::unique_ptr<Transport>(); },
                   [] { return std::unique_ptr<Transport>(); }),
        fleet(io, transports, {bind, port, std::string(32, 's')}) {}
  asio::io_context io;
  AgentTransports transports;
  AgentFleet fleet;
};

}  // namespace

TEST_CASE("a rendezvous port in use: the error names it and says how to choose another") {
  asio::io_context io;
  asio::ip::tcp::acceptor taken(io, {asio::ip::make_address("127.0.0.1"), 0});
  const int port = taken.local_endpoint().port();
  Fleet f("127.0.0.1", port);
  const auto listening = f.fleet.listen({});
  REQUIRE_FALSE(listening);
  const std::string where = "cannot listen for the rendezvous on 127.0.0.1:" + std::to_string(port);
  CHECK(listening.error().starts_with(where + ": "));
  CHECK(listening.error().ends_with(" (is another job using it? choose another with --rdzv-port)"));

  // dlaunch check takes its port from the hosts file only.
  asio::io_context io2;
  AgentTransports none([] { return std::unique_ptr<Transport>(); },
                       [] { return std::unique_ptr<Transport>(); });
  AgentFleet::Settings s{"127.0.0.1", port, std::string(32, 's')};
  s.port_chosen_by = "[rendezvous] port in the hosts file";
  AgentFleet check(io2, none, s);
  const auto refused = check.listen({});
  REQUIRE_FALSE(refused);
  CHECK(refused.error().ends_with(
      " (is another job using it? choose another with [rendezvous] port in the hosts file)"));
}

TEST_CASE("a rendezvous address that is none: the error names it; any free port listens") {
  Fleet bad("not-an-address", 0);
  const auto refused = bad.fleet.listen({});
  REQUIRE_FALSE(refused);
  CHECK(refused.error().starts_with("cannot listen for the rendezvous on not-an-address:0: "));
  CHECK(refused.error().find("--rdzv-port") == std::string::npos);

  Fleet free("127.0.0.1", 0);
  REQUIRE(free.fleet.listen({}));
  CHECK(free.fleet.server().port() != 0);
  free.fleet.stop();
}
