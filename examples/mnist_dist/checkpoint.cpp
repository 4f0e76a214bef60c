#include "checkpoint.h"

#include <cstdio>
#include <filesystem>
#include <stdexcept>

namespace mnist {

void save_checkpoint(const std::string& path, Net& model, torch::optim::SGD& optimizer, int epoch) {
  torch::serialize::OutputArchive archive;
  torch::serialize::OutputArchive model_archive;
  model->save(model_archive);
  archive.write("model", model_archive);
  torch::serialize::OutputArchive optimizer_archive;
  optimizer.save(optimizer_archive);
  archive.write("optimizer", optimizer_archive);
  archive.write("epoch", torch::tensor(static_cast<std::int64_t>(epoch)));
  const std::string tmp = path + ".tmp";
  archive.save_to(tmp);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    throw std::runtime_error("cannot rename " + tmp + " to " + path);
  }
}

int load_checkpoint(const std::string& path, Net& model, torch::optim::SGD& optimizer) {
  if (!std::filesystem::exists(path)) {
    throw std::runtime_error("cannot resume: checkpoint " + path + " does not exist");
  }
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    torch::serialize::InputArchive model_archive;
    archive.read("model", model_archive);
    model->load(model_archive);
    torch::serialize::InputArchive optimizer_archive;
    archive.read("optimizer", optimizer_archive);
    optimizer.load(optimizer_archive);
    torch::Tensor epoch;
    archive.read("epoch", epoch);
    return static_cast<int>(epoch.item<std::int64_t>());
  } catch (const c10::Error& e) {
    // Wrong file, another model or a truncated write: name the file, not the archive key.
    throw std::runtime_error("cannot resume from " + path + ": not a mnist_dist checkpoint (" +
                             e.what_without_backtrace() + ")");
  }
}

}  // namespace mnist
