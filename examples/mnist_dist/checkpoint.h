// Model and optimizer state with the epoch, written atomically by rank 0
// (temporary file, then rename) and read back by every rank on --resume.
#pragma once

#include <torch/torch.h>

#include <string>

#include "model.h"

namespace mnist {

void save_checkpoint(const std::string& path, Net& model, torch::optim::SGD& optimizer, int epoch);
// Returns the epoch the checkpoint was saved after.
int load_checkpoint(const std::string& path, Net& model, torch::optim::SGD& optimizer);
// The same from a checkpoint's bytes, its tensors onto `device`; `path` names
// it in errors.
int load_checkpoint_bytes(const std::string& bytes, const std::string& path, Net& model,
                          torch::optim::SGD& optimizer, const torch::Device& device);
// A file's bytes; empty when it does not exist.
std::string read_checkpoint_file(const std::string& path);

}  // namespace mnist
