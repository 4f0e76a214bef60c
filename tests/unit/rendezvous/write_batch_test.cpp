#include "rendezvous/write_batch.h"

#include <doctest/doctest.h>

using namespace dlaunch;

TEST_CASE("a write batch takes whole frames, in order, up to the batch size") {
  std::deque<std::string> queue = {"aa", "bbb", std::string(kMaxWriteBatch - 5, 'c'), "d"};
  std::string batch;
  CHECK(take_write_batch(queue, batch) == kMaxWriteBatch);
  CHECK(batch == "aabbb" + std::string(kMaxWriteBatch - 5, 'c'));
  REQUIRE(queue.size() == 1);  // "d" would not fit
  CHECK(queue.front() == "d");

  batch.clear();
  CHECK(take_write_batch(queue, batch) == 1);
  CHECK(batch == "d");
  CHECK(queue.empty());
  CHECK(take_write_batch(queue, batch) == 0);
  CHECK(batch == "d");
}

TEST_CASE("a frame larger than a batch goes out alone, never split") {
  const std::string big(kMaxWriteBatch * 2, 'x');
  std::deque<std::string> queue = {big, "after"};
  std::string batch;
  CHECK(take_write_batch(queue, batch) == big.size());
  CHECK(batch == big);
  CHECK(queue == std::deque<std::string>{"after"});
}

TEST_CASE("a batch already begun only takes what still fits") {
  std::deque<std::string> queue = {std::string(kMaxWriteBatch, 'o')};
  std::string batch = "priority";
  CHECK(take_write_batch(queue, batch) == 0);
  CHECK(batch == "priority");
  CHECK(queue.size() == 1);
}
