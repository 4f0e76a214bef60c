#include "transfer/sync_ignore.h"

#include <doctest/doctest.h>

using namespace dlaunch;

TEST_CASE(".git is always ignored, at any depth, file or directory") {
  const auto rules = IgnoreRules::parse("");
  CHECK(rules.ignored(".git", true));
  CHECK(rules.ignored("vendor/lib/.git", false));  // a submodule's .git file
  CHECK_FALSE(rules.ignored(".github", true));
  CHECK_FALSE(rules.ignored("src/main.py", false));
}

TEST_CASE("comments, blank lines, names at any depth, directories only, anchored paths") {
  const auto rules = IgnoreRules::parse(
      "# checkpoints\n"
      "\n"
      "*.pt   \n"
      "data/\n"
      "/build\n"
      "docs/*.md\n"
      "\\#notes\n"
      "cache?\n"
      "[Tt]mp\n");
  CHECK(rules.lines() == std::vector<std::string>{".git", "*.pt", "data/", "/build", "docs/*.md",
                                                  "\\#notes", "cache?", "[Tt]mp"});
  CHECK(rules.ignored("model.pt", false));
  CHECK(rules.ignored("runs/1/model.pt", false));
  CHECK_FALSE(rules.ignored("model.pth", false));
  CHECK(rules.ignored("data", true));
  CHECK(rules.ignored("src/data", true));
  CHECK_FALSE(rules.ignored("data", false));  // a file named data stays
  CHECK(rules.ignored("build", true));
  CHECK(rules.ignored("build", false));
  CHECK_FALSE(rules.ignored("src/build", true));  // anchored at the top
  CHECK(rules.ignored("docs/index.md", false));
  CHECK_FALSE(rules.ignored("docs/api/index.md", false));  // '*' stops at '/'
  CHECK_FALSE(rules.ignored("other/docs/index.md", false));
  CHECK(rules.ignored("#notes", false));
  CHECK(rules.ignored("cache1", true));
  CHECK_FALSE(rules.ignored("cache12", true));
  CHECK(rules.ignored("Tmp", true));
  CHECK(rules.ignored("a/tmp", false));
}

TEST_CASE("'**' matches any number of components; '!' re-includes, the last match wins") {
  const auto rules = IgnoreRules::parse(
      "**/logs\n"
      "out/**\n"
      "a/**/z.txt\n"
      "*.log\n"
      "!keep.log\n");
  CHECK(rules.ignored("logs", true));
  CHECK(rules.ignored("x/y/logs", false));
  CHECK(rules.ignored("out/1/2", false));
  CHECK(rules.ignored("a/z.txt", false));
  CHECK(rules.ignored("a/b/c/z.txt", false));
  CHECK_FALSE(rules.ignored("b/a/z.txt", false));
  CHECK(rules.ignored("train.log", false));
  CHECK_FALSE(rules.ignored("keep.log", false));
  CHECK_FALSE(rules.ignored("deep/keep.log", false));
}

TEST_CASE("the rules survive the trip through their lines (as the offer carries them)") {
  const auto rules = IgnoreRules::parse("*.pt\ndata/\n!a.pt\n");
  const auto back = IgnoreRules::from_lines(rules.lines());
  CHECK(back.lines() == rules.lines());
  CHECK(back.ignored(".git", true));
  CHECK(back.ignored("x.pt", false));
  CHECK_FALSE(back.ignored("a.pt", false));
  CHECK(back.ignored("data", true));
}

TEST_CASE("glob_path_match on components") {
  using V = std::vector<std::string_view>;
  CHECK(glob_path_match({"**"}, V{}));
  CHECK(glob_path_match({"**", "*.py"}, V{"a", "b.py"}));
  CHECK_FALSE(glob_path_match({"*.py"}, V{"a", "b.py"}));
  CHECK(glob_path_match({"a", "**"}, V{"a"}));
}
