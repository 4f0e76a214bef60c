#include "launcher/config/git_source.h"

#include <doctest/doctest.h>

using namespace dlaunch;

namespace {

GitSource parsed(std::string_view text) {
  auto result = parse_git_source(text);
  REQUIRE(result.ok());
  return *result;
}

}  // namespace

TEST_CASE("--sync-git splits @REF only where it cannot be part of the URL") {
  CHECK(parsed("https://git.example.com/org/mnist.git").url ==
        "https://git.example.com/org/mnist.git");
  CHECK(parsed("https://git.example.com/org/mnist.git").ref.empty());
  const auto tagged = parsed("https://git.example.com/org/mnist.git@v1.2");
  CHECK(tagged.url == "https://git.example.com/org/mnist.git");
  CHECK(tagged.ref == "v1.2");
  // A user in the URL is not a ref.
  const auto with_user = parsed("https://bot@git.example.com/org/mnist.git");
  CHECK(with_user.url == "https://bot@git.example.com/org/mnist.git");
  CHECK(with_user.ref.empty());
  // scp-like: the user before ':' stays; a ref after the path splits.
  CHECK(parsed("git@git.example.com:org/mnist.git").ref.empty());
  const auto scp = parsed("git@git.example.com:org/mnist.git@feature/x");
  CHECK(scp.url == "git@git.example.com:org/mnist.git");
  CHECK(scp.ref == "feature/x");
  const auto local = parsed("/srv/git/mnist.git@main");
  CHECK(local.url == "/srv/git/mnist.git");
  CHECK(local.ref == "main");
}

TEST_CASE("--sync-git refuses what git would misread or cannot name") {
  CHECK(parse_git_source("https://h/r.git@").error() ==
        "--sync-git https://h/r.git@: nothing after '@' (expected URL@BRANCH, TAG or COMMIT)");
  CHECK(parse_git_source("--upload-pack=x").error().find("may not start with '-'") !=
        std::string::npos);
  CHECK_FALSE(parse_git_source("@main").ok());
}

TEST_CASE("the checkout's directory is the repository's name, as git clone names it") {
  CHECK(git_repository_name("https://git.example.com/org/mnist-pytorch.git") == "mnist-pytorch");
  CHECK(git_repository_name("git@git.example.com:mnist.git") == "mnist");
  CHECK(git_repository_name("/srv/git/mnist/") == "mnist");
  CHECK(git_repository_name("git://198.18.0.1/repo") == "repo");
  CHECK(git_repository_name("/").empty());
}
