#include "common/did_you_mean.h"

#include <algorithm>
#include <vector>

namespace dlaunch {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Three rolling rows are enough: a swap looks back two rows.
  std::vector<std::size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[b.size()];
}

std::optional<std::string> did_you_mean(std::string_view word,
                                        std::span<const std::string_view> candidates,
                                        std::size_t max_distance) {
  std::optional<std::string> best;
  std::size_t best_distance = max_distance + 1;
  for (std::string_view candidate : candidates) {
    const std::size_t distance = edit_distance(word, candidate);
    const std::size_t longer = std::max(word.size(), candidate.size());
    if (distance < best_distance && distance * 2 < longer) {
      best = std::string(candidate);
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace dlaunch
