#include <doctest/doctest.h>

#include "common/did_you_mean.h"

using namespace dlaunch;

TEST_CASE("did_you_mean") {
  constexpr std::string_view keys[] = {"name", "address", "port", "slots", "transport"};
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("slot", "slots") == 1);
  CHECK(edit_distance("prot", "port") == 1);
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(did_you_mean("slot", keys) == "slots");
  CHECK(did_you_mean("adress", keys) == "address");
  CHECK(did_you_mean("trasnport", keys) == "transport");
  CHECK(did_you_mean("Name", keys) == "name");
  CHECK_FALSE(did_you_mean("host", keys).has_value());  // 2 edits from "port", but 4 letters
  CHECK_FALSE(did_you_mean("colour", keys).has_value());
  CHECK_FALSE(did_you_mean("", keys).has_value());
}
