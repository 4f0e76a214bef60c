#include <doctest/doctest.h>
#include <openssl/evp.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "ssh/known_hosts.h"
#include "ssh/session.h"

using namespace dlaunch;

namespace {

// Public host keys made with ssh-keygen for these tests.
const std::string kEd1 = "AAAAC3NzaC1lZDI1NTE5AAAAIB7FKhIeyXcrsVor46HGAIS6aC4K2W7Lv7C5qvKOQxxV";
const std::string kEd2 = "AAAAC3NzaC1lZDI1NTE5AAAAIPu/yQfBQ2j8EvWQe/DQ/rJzGmbfF4Bek//Pd9prSwZT";
const std::string kEcdsa =
    "AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBP7B3MUxekRj/a6xJGbA1cv9jXkmRYpzvba3/"
    "k9klbywtgxJz8RmGRGQrg2JeDa5aTY2eIcyzRHHkUcoClIXYAI=";
// `ssh-keygen -H` of "gpu1 ssh-ed25519 <kEd1>".
const std::string kHashedGpu1 = "|1|D1/XDghba9U2UfcwNjRon2C19AU=|VX0vn8TZRA8gKACF9OGrsNT8jGY=";

std::string blob(const std::string& b64) {
  std::string out(b64.size(), '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(b64.data()),
                          static_cast<int>(b64.size()));
  for (auto it = b64.rbegin(); it != b64.rend() && *it == '='; ++it) --n;
  out.resize(static_cast<std::size_t>(n));
  return out;
}

struct Fixture {
  std::filesystem::path dir;
  LIBSSH2_SESSION* session;
  Fixture() {
    ensure_libssh2_initialized();
    std::string tmpl = std::filesystem::temp_directory_path() / "dlaunch-kh-XXXXXX";
    dir = ::mkdtemp(tmpl.data());
    session = libssh2_session_init();
  }
  ~Fixture() {
    libssh2_session_free(session);
    std::filesystem::remove_all(dir);
  }
  std::string write(const std::string& text) {
    const auto path = dir / ".ssh" / "known_hosts";
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
    return path;
  }
  KnownHosts::Check check(const std::string& path, const std::string& host, int port,
                          const std::string& key_b64, int type = LIBSSH2_HOSTKEY_TYPE_ED25519) {
    KnownHosts known(session, path);
    const std::string key = blob(key_b64);
    return known.check(host, port, key.data(), key.size(), type);
  }
};

}  // namespace

TEST_CASE("known_hosts: match, other key, unknown host, ports") {
  Fixture f;
  const auto path = f.write("# comment\n\ngpu1,10.0.0.1 ssh-ed25519 " + kEd1 +
                            "\n[gpu2]:2222 ssh-ed25519 " + kEd2 + " a comment\n");
  CHECK(f.check(path, "gpu1", 22, kEd1).result == KnownHosts::Result::match);
  CHECK(f.check(path, "10.0.0.1", 22, kEd1).result == KnownHosts::Result::match);
  const auto changed = f.check(path, "10.0.0.1", 22, kEd2);
  CHECK(changed.result == KnownHosts::Result::mismatch);
  CHECK(changed.line == 3);
  CHECK(f.check(path, "gpu2", 2222, kEd2).result == KnownHosts::Result::match);
  CHECK(f.check(path, "gpu2", 22, kEd2).result == KnownHosts::Result::unknown);
  CHECK(f.check(path, "gpu3", 22, kEd1).result == KnownHosts::Result::unknown);
  // A key of another type is not a changed key: the host has several.
  CHECK(f.check(path, "gpu1", 22, kEcdsa, LIBSSH2_HOSTKEY_TYPE_ECDSA_256).result ==
        KnownHosts::Result::unknown);
}

TEST_CASE("known_hosts: hashed names") {
  Fixture f;
  const auto path = f.write(kHashedGpu1 + " ssh-ed25519 " + kEd1 + "\n");
  CHECK(f.check(path, "gpu1", 22, kEd1).result == KnownHosts::Result::match);
  CHECK(f.check(path, "gpu1", 22, kEd2).result == KnownHosts::Result::mismatch);
  CHECK(f.check(path, "gpu9", 22, kEd1).result == KnownHosts::Result::unknown);
}

TEST_CASE("known_hosts: a bad line does not hide the lines below it") {
  Fixture f;
  const auto path = f.write(
      "this is not a known_hosts line\nx ssh-ed25519 !!!\n"
      "@cert-authority *.lab ssh-ed25519 " +
      kEd2 + "\ngpu1 ssh-ed25519 " + kEd1 + "\n");
  CHECK(f.check(path, "gpu1", 22, kEd1).result == KnownHosts::Result::match);
  const auto changed = f.check(path, "gpu1", 22, kEd2);
  CHECK(changed.result == KnownHosts::Result::mismatch);
  CHECK(changed.line == 4);
}

TEST_CASE("known_hosts: @revoked keys are refused even when listed") {
  Fixture f;
  const auto path = f.write("gpu1 ssh-ed25519 " + kEd1 + "\n@revoked * ssh-ed25519 " + kEd1 + "\n");
  CHECK(f.check(path, "gpu1", 22, kEd1).result == KnownHosts::Result::revoked);
}

TEST_CASE("known_hosts: the known key types come first in the algorithm list") {
  Fixture f;
  const auto path = f.write("gpu1 ecdsa-sha2-nistp256 " + kEcdsa + "\n");
  KnownHosts known(f.session, path);
  const std::string known_first = known.preferred_algorithms("gpu1", 22);
  CHECK(known_first.rfind("ecdsa-sha2-nistp256,ssh-ed25519,", 0) == 0);
  CHECK(known.preferred_algorithms("gpu2", 22).rfind("ssh-ed25519,ecdsa-sha2-nistp256,", 0) == 0);
}

TEST_CASE("known_hosts: append creates the file, keeps lines apart, is then known") {
  Fixture f;
  const auto path = (f.dir / "new" / "known_hosts").string();
  {
    KnownHosts known(f.session, path);
    const std::string key = blob(kEd1);
    const std::string line =
        known.append("10.1.2.3", 2200, key.data(), key.size(), LIBSSH2_HOSTKEY_TYPE_ED25519);
    CHECK(line == "[10.1.2.3]:2200 ssh-ed25519 " + kEd1 + "\n");
  }
  CHECK((std::filesystem::status(f.dir / "new").permissions() & std::filesystem::perms::all) ==
        std::filesystem::perms::owner_all);
  CHECK(f.check(path, "10.1.2.3", 2200, kEd1).result == KnownHosts::Result::match);

  const auto unterminated = f.write("gpu1 ssh-ed25519 " + kEd1);  // no final newline
  {
    KnownHosts known(f.session, unterminated);
    const std::string key = blob(kEd2);
    known.append("gpu2", 22, key.data(), key.size(), LIBSSH2_HOSTKEY_TYPE_ED25519);
  }
  CHECK(f.check(unterminated, "gpu1", 22, kEd1).result == KnownHosts::Result::match);
  CHECK(f.check(unterminated, "gpu2", 22, kEd2).result == KnownHosts::Result::match);
}
