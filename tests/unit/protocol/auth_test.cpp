#include <doctest/doctest.h>

#include "protocol/auth.h"

using namespace dlaunch;

TEST_CASE("HMAC proofs depend on the secret and both nonces") {
  const std::string s1 = auth::random_bytes(32);
  const std::string s2 = auth::random_bytes(32);
  CHECK(s1 != s2);
  const auto p = auth::join_proof(s1, "server", "agent");
  CHECK(p.size() == 32);
  CHECK(auth::constant_time_equal(p, auth::join_proof(s1, "server", "agent")));
  CHECK_FALSE(auth::constant_time_equal(p, auth::join_proof(s2, "server", "agent")));
  CHECK_FALSE(auth::constant_time_equal(p, auth::join_proof(s1, "server2", "agent")));
  CHECK_FALSE(auth::constant_time_equal(p, auth::welcome_proof(s1, "server", "agent")));
  // RFC 4231 test case 2
  CHECK(auth::to_hex(auth::hmac_sha256("Jefe", "what do ya want for nothing?")) ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}
