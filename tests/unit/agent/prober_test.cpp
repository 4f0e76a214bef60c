#include <doctest/doctest.h>

#include "agent/interfaces.h"
#include "agent/probe_listener.h"
#include "agent/prober.h"
#include "common/socket.h"

using namespace dlaunch;

TEST_CASE("a probe reaches a listening port over loopback and names the interface") {
  asio::io_context io;
  ProbeListener listener(io);
  REQUIRE(listener.port() != 0);
  // A port nothing listens on: taken free a moment ago, so the connect is refused.
  const int closed = find_free_port();
  proto::Probe probe{listener.port(), 2000, {"127.0.0.1", "localhost"}};
  const auto interfaces = list_interfaces();
  std::vector<net::ProbeOutcome> got;
  // The listener keeps accepting: stop the loop once the probe is over.
  probe_addresses(io, probe, interfaces, [&](std::vector<net::ProbeOutcome> o) {
    got = o;
    io.stop();
  });
  io.run_for(std::chrono::seconds(5));
  REQUIRE(got.size() == 2);
  CHECK(got[0].reached);
  CHECK(got[0].interface == "lo");
  CHECK(got[1].reached);

  io.restart();
  proto::Probe refused{closed, 2000, {"127.0.0.1"}};
  probe_addresses(io, refused, interfaces, [&](std::vector<net::ProbeOutcome> o) {
    got = o;
    io.stop();
  });
  io.run_for(std::chrono::seconds(5));
  REQUIRE(got.size() == 1);
  CHECK_FALSE(got[0].reached);
  CHECK(got[0].error == "refused");
}

TEST_CASE("after close the probe port is free again for MASTER_PORT") {
  asio::io_context io;
  ProbeListener listener(io);
  const auto port = listener.port();
  REQUIRE(port != 0);
  proto::Probe probe{port, 2000, {"127.0.0.1"}};
  bool done = false;
  probe_addresses(io, probe, {}, [&](std::vector<net::ProbeOutcome> o) {
    CHECK(o.at(0).reached);
    done = true;
    io.stop();
  });
  io.run_for(std::chrono::seconds(3));
  REQUIRE(done);
  listener.close();
  io.restart();
  io.poll();
  // What a TCPStore does with MASTER_PORT: bind it with SO_REUSEADDR and listen.
  asio::ip::tcp::acceptor store(io);
  store.open(asio::ip::tcp::v4());
  store.set_option(asio::socket_base::reuse_address(true));
  asio::error_code ec;
  store.bind({asio::ip::address_v4::loopback(), port}, ec);
  CHECK_FALSE(ec);
}

TEST_CASE("this host's interfaces include loopback, classified") {
  const auto interfaces = list_interfaces();
  const auto* lo = net::interface_with_address(interfaces, "127.0.0.1");
  REQUIRE(lo != nullptr);
  CHECK(lo->kind == net::InterfaceKind::loopback);
  CHECK(lo->up);
  CHECK(lo->mtu > 0);
}

TEST_CASE("the probe listener takes the fixed MASTER_PORT when it is free, else any") {
  asio::io_context io;
  const int wanted = find_free_port();
  ProbeListener fixed(io, static_cast<std::uint16_t>(wanted));
  CHECK(fixed.port() == wanted);
  ProbeListener busy(io, static_cast<std::uint16_t>(wanted));  // taken by `fixed` now
  CHECK(busy.port() != 0);
  CHECK(busy.port() != wanted);
}
