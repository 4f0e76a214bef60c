// `--sync`'s ignore rules: what `.dlaunchignore` at the top of the synced
// directory says, plus `.git` at any depth, which is never synced. The
// coordinator skips what they match when it lists the directory; the agent
// keeps what they match when `--sync-delete` mirrors deletions, so the rules
// travel in the offer (SyncOffer::ignore).
//
// The subset of gitignore accepted, one pattern a line:
// - blank lines and lines starting with `#` are skipped (`\#` for a leading
//   `#`); trailing spaces are dropped;
// - `!pattern` re-includes what an earlier pattern excluded (the last
//   matching line wins). As in git, nothing under an excluded directory comes
//   back: the directory is not even listed;
// - a trailing `/` matches directories only (`data/`);
// - a pattern with no other `/` matches a name at any depth (`*.pt`); with a
//   leading or inner `/` it is anchored at the top of the directory (`/build`,
//   `docs/*.md`);
// - `*` matches any run of characters but `/`, `?` one character, `[a-z]`
//   and `[!a-z]` a class (fnmatch(3)); a whole component `**` matches any
//   number of components (`**/cache`, `logs/**`, `a/**/b`).
// Not supported: `\` escapes other than `\#` and `\!`, trailing-space escapes,
// and `.dlaunchignore` files below the top.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dlaunch {

inline constexpr std::string_view kIgnoreFileName = ".dlaunchignore";

class IgnoreRules {
 public:
  // The rules of a `.dlaunchignore`'s text (`.git` is always added).
  static IgnoreRules parse(std::string_view text);
  // Rebuilds rules from the lines `lines()` returned (from the wire).
  static IgnoreRules from_lines(const std::vector<std::string>& lines);

  // `path`: relative to the synced directory, '/'-separated, no leading '/'.
  // Its parent directories are assumed not ignored (callers walk top-down and
  // do not descend into an ignored directory).
  bool ignored(std::string_view path, bool is_dir) const;
  // The patterns as given (comments and blank lines dropped).
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  struct Rule {
    std::vector<std::string> segments;  // the pattern split at '/'
    bool negate = false;
    bool dir_only = false;
  };
  void add(std::string_view line);

  std::vector<std::string> lines_;
  std::vector<Rule> rules_;
};

// Whether '/'-separated `path` matches `pattern` (the same split at '/',
// components `**` included). Exposed for tests.
bool glob_path_match(const std::vector<std::string>& pattern,
                     const std::vector<std::string_view>& path);

}  // namespace dlaunch
