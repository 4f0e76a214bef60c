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

}  // namespace mnist
