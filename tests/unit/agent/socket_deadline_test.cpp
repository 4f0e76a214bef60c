#include <doctest/doctest.h>

#include "agent/socket_deadline.h"

#include <optional>
#include <thread>

using namespace dlaunch;

namespace {

// A loopback connection whose far end never writes: a read on `client` stays
// pending until something closes it.
struct QuietPair {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor{io, {asio::ip::address_v4::loopback(), 0}};
  asio::ip::tcp::socket client{io};
  asio::ip::tcp::socket server{io};
  QuietPair() {
    client.connect(acceptor.local_endpoint());
    acceptor.accept(server);
  }
};

}  // namespace

TEST_CASE("a passed deadline closes the socket and the pending read ends as expired") {
  QuietPair pair;
  SocketDeadline deadline(pair.io.get_executor());
  auto owner = std::make_shared<int>(0);
  deadline.arm(pair.client, std::chrono::milliseconds(20), owner);
  std::optional<asio::error_code> read_ended;
  char byte = 0;
  pair.client.async_read_some(asio::buffer(&byte, 1),
                              [&](const asio::error_code& ec, std::size_t) { read_ended = ec; });
  pair.io.run_for(std::chrono::seconds(5));
  REQUIRE(read_ended.has_value());
  CHECK(*read_ended);
  CHECK(deadline.expired());
  CHECK_FALSE(pair.client.is_open());
}

TEST_CASE("a later arm replaces the earlier deadline, and cancel ends it") {
  QuietPair pair;
  SocketDeadline deadline(pair.io.get_executor());
  auto owner = std::make_shared<int>(0);
  deadline.arm(pair.client, std::chrono::milliseconds(1), owner);
  // The first wait may already be over and only queued: it must do nothing now.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  deadline.arm(pair.client, std::chrono::hours(1), owner);
  pair.io.run_for(std::chrono::milliseconds(50));
  CHECK_FALSE(deadline.expired());
  CHECK(pair.client.is_open());

  deadline.arm(pair.client, std::chrono::milliseconds(1), owner);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  deadline.cancel();
  pair.io.restart();
  pair.io.run_for(std::chrono::milliseconds(50));
  CHECK_FALSE(deadline.expired());
  CHECK(pair.client.is_open());
  CHECK(owner.use_count() == 1);  // every wait has ended and let the owner go
}

TEST_CASE("connect errors read as a probe table shows them") {
  CHECK(connect_failure(asio::error::connection_refused) == "refused");
  CHECK(connect_failure(asio::error::host_unreachable) == "unreachable");
  CHECK(connect_failure(asio::error::network_unreachable) == "unreachable");
  CHECK(connect_failure(asio::error::connection_reset) ==
        asio::error_code(asio::error::connection_reset).message());
}
