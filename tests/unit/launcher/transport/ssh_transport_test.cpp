#include <doctest/doctest.h>

#include "launcher/transport/ssh_transport.h"
#include "protocol/launch_spec.h"

using namespace dlaunch;

namespace {

LaunchSpec sample_spec() {
  LaunchSpec spec;
  spec.secret = std::string(32, 's');
  spec.rdzv_host = "198.18.0.254";
  spec.rdzv_port = 29400;
  spec.node_rank = 1;
  spec.host_name = "h2";
  spec.argv = {"python3", "train.py"};
  spec.env = {{"A", "1"}};
  spec.nnodes = 2;
  return spec;
}

}  // namespace

TEST_CASE("rendezvous via SSH: the spec points at the host's end of the forward") {
  const LaunchSpec spec = sample_spec();
  const auto routed = route_spec_through_forward(encode_launch_spec(spec), 41234);
  REQUIRE(routed);
  CHECK(routed->coordinator_port == 29400);
  LaunchSpec expected = spec;
  expected.rdzv_host = "127.0.0.1";
  expected.rdzv_port = 41234;
  // Only the rendezvous address changes: the secret and everything else stay.
  CHECK(routed->bytes == encode_launch_spec(expected));
}

TEST_CASE("rendezvous via SSH: bytes that are not one launch spec are refused") {
  const std::string good = encode_launch_spec(sample_spec());
  CHECK_FALSE(route_spec_through_forward("", 1));
  CHECK_FALSE(route_spec_through_forward(good.substr(0, 7), 1));
  CHECK_FALSE(route_spec_through_forward(good.substr(0, good.size() - 1), 1));
  CHECK_FALSE(route_spec_through_forward(good + "x", 1));
  std::string bad_magic = good;
  bad_magic[0] ^= 1;
  CHECK_FALSE(route_spec_through_forward(bad_magic, 1));
}
