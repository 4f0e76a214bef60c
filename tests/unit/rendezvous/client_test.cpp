#include "rendezvous/client.h"

#include <doctest/doctest.h>

using namespace dlaunch;

TEST_CASE("agents of big jobs spread their first connect") {
  using std::chrono::milliseconds;
  CHECK(RendezvousClient::jitter_for(2, 1) == milliseconds(0));
  CHECK(RendezvousClient::jitter_for(1000, 1) == milliseconds(0));
  CHECK(RendezvousClient::jitter_for(10'000, 1) == milliseconds(500));
  CHECK(RendezvousClient::jitter_for(100'000, 1) == milliseconds(5000));
}

TEST_CASE("the probe's scouts, node 0 among them, connect without the jitter") {
  using std::chrono::milliseconds;
  int scouts = 0;
  for (int node = 0; node < 10'000; ++node)
    scouts += RendezvousClient::jitter_for(10'000, node) == milliseconds(0);
  CHECK(scouts == 64);
  CHECK(RendezvousClient::jitter_for(10'000, 0) == milliseconds(0));
  CHECK(RendezvousClient::jitter_for(10'000, 9'999) == milliseconds(0));
  CHECK(RendezvousClient::jitter_for(10'000, 5'000) == milliseconds(500));
}
