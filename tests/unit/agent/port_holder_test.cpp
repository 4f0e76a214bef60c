#include <doctest/doctest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/port_holder.h"

using namespace dlaunch;

TEST_CASE("port holder: listening sockets of a port in /proc/net/tcp") {
  // 29500 is 0x733C; state 0A is LISTEN, 01 ESTABLISHED.
  const std::string table =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
      "timeout inode\n"
      "   0: 00000000:733C 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        "
      "0 4242 1 0000000000000000 100 0 0 10 0\n"
      "   1: 0100007F:733C 0100007F:A000 01 00000000:00000000 00:00000000 00000000     0        "
      "0 5151 1 0000000000000000 20 4 30 10 -1\n"
      "   2: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        "
      "0 777 1 0000000000000000 100 0 0 10 0\n"
      "garbage line\n";
  CHECK(listening_inodes(table, 29500) == std::vector<unsigned long>{4242});
  CHECK(listening_inodes(table, 22) == std::vector<unsigned long>{777});
  CHECK(listening_inodes(table, 80).empty());
  CHECK(listening_inodes("", 80).empty());
}

TEST_CASE("port holder: this process is found holding its own listener") {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(fd, 1) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  const int port = ntohs(addr.sin_port);
  const auto holder = port_holder(port);
  REQUIRE(holder.has_value());
  CHECK(holder->pid == ::getpid());
  CHECK(describe_port_in_use(port) == "port " + std::to_string(port) + " is held by pid " +
                                          std::to_string(::getpid()) + " (" + holder->command +
                                          ")");
  ::close(fd);
  CHECK_FALSE(port_holder(port).has_value());
}
