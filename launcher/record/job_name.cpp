#include "launcher/record/job_name.h"

#include <cctype>

namespace dlaunch {

Result<void> check_job_name(const std::string& name) {
  if (name.size() > kMaxJobName)
    return fail("is " + std::to_string(name.size()) + " characters long; at most " +
                std::to_string(kMaxJobName));
  bool ok = !name.empty() && name[0] != '.' && name[0] != '-';
  for (char c : name)
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.');
  if (!ok) return fail("use letters, digits, '-', '_' and '.' (not first)");
  return {};
}

}  // namespace dlaunch
