#include "launcher/sync/git_commit.h"

#include <doctest/doctest.h>

using namespace dlaunch;

namespace {

const std::string A(40, 'a');
const std::string B(40, 'b');
const std::string C(40, 'c');
const std::string D(40, 'd');
const std::string kLsRemote = A + "\tHEAD\n" + A + "\trefs/heads/main\n" + B + "\trefs/heads/v1\n" +
                              C + "\trefs/tags/v1\n" + D + "\trefs/tags/v1^{}\n" + B +
                              "\trefs/remotes/origin/main\n";

}  // namespace

TEST_CASE("REF to one commit: HEAD, branches first, annotated tags peeled") {
  CHECK(commit_for_ref(kLsRemote, "") == A);
  CHECK(commit_for_ref(kLsRemote, "main") == A);  // not refs/remotes/origin/main's
  CHECK(commit_for_ref(kLsRemote, "v1") == B);    // a branch wins over a tag, as in git
  CHECK(commit_for_ref(kLsRemote, "refs/tags/v1") == C);
  CHECK(commit_for_ref(kLsRemote, "refs/tags/v1^{}") == D);
  CHECK_FALSE(commit_for_ref(kLsRemote, "nope").has_value());
  CHECK(commit_for_ref(A + "\trefs/tags/t\n" + D + "\trefs/tags/t^{}\n", "t") == D);
}

TEST_CASE("a full object name is taken as it is, an abbreviated one is not") {
  CHECK(is_full_object_name(A));
  CHECK(is_full_object_name(std::string(64, 'f')));
  CHECK_FALSE(is_full_object_name("abc1234"));
  CHECK_FALSE(is_full_object_name(std::string(40, 'g')));
  CHECK(resolve_git_commit("/nonexistent/repo.git", A).commit == A);  // no network needed
}

TEST_CASE("a repository git cannot read gives git's own words") {
  const auto r = resolve_git_commit("/nonexistent/repo.git", "main");
  CHECK(r.commit.empty());
  CHECK(r.error.find("--sync-git /nonexistent/repo.git@main: ") == 0);
}
