#include "rendezvous/client.h"

#include <doctest/doctest.h>

using namespace dlaunch;

TEST_CASE("agents of big jobs spread their first connect") {
  using std::chrono::milliseconds;
  CHECK(RendezvousClient::jitter_for(2) == milliseconds(0));
  CHECK(RendezvousClient::jitter_for(1000) == milliseconds(0));
  CHECK(RendezvousClient::jitter_for(10'000) == milliseconds(500));
  CHECK(RendezvousClient::jitter_for(100'000) == milliseconds(5000));
}
