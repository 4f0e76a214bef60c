#include "checkpoint.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
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

namespace {

// Wrong file, another model or a truncated write: name the file, not the archive key.
[[noreturn]] void not_a_checkpoint(const std::string& path, const c10::Error& e) {
  throw std::runtime_error("cannot resume from " + path + ": not a mnist_dist checkpoint (" +
                           e.what_without_backtrace() + ")");
}

int load_archive(torch::serialize::InputArchive& archive, const std::string& path, Net& model,
                 torch::optim::SGD& optimizer) {
  try {
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
    not_a_checkpoint(path, e);
  }
}

}  // namespace

int load_checkpoint(const std::string& path, Net& model, torch::optim::SGD& optimizer) {
  if (!std::filesystem::exists(path)) {
    throw std::runtime_error("cannot resume: checkpoint " + path + " does not exist");
  }
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path);
  } catch (const c10::Error& e) {
    not_a_checkpoint(path, e);
  }
  return load_archive(archive, path, model, optimizer);
}

int load_checkpoint_bytes(const std::string& bytes, const std::string& path, Net& model,
                          torch::optim::SGD& optimizer, const torch::Device& device) {
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(bytes.data(), bytes.size(), device);
  } catch (const c10::Error& e) {
    not_a_checkpoint(path, e);
  }
  return load_archive(archive, path, model, optimizer);
}

std::string read_checkpoint_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace mnist
