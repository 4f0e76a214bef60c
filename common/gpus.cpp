#include "common/gpus.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

namespace dlaunch {

int count_gpus() {
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) {
    std::string_view list(visible);
    if (list.empty() || list == "-1" || list == "NoDevFiles") return 0;
    int n = 1;
    for (char c : list) n += c == ',';
    return n;
  }
  return count_gpu_devices();
}

int count_gpu_devices() {
  // /dev/nvidia0, /dev/nvidia1, ... but not nvidiactl or nvidia-uvm.
  int n = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 6 && name.starts_with("nvidia") &&
        std::isdigit(static_cast<unsigned char>(name[6])) &&
        name.find_first_not_of("0123456789", 6) == std::string::npos) {
      ++n;
    }
  }
  return n;
}

}  // namespace dlaunch
