// How many GPUs this host offers to the job: the devices listed in
// CUDA_VISIBLE_DEVICES when set, else the NVIDIA device nodes present.
#pragma once

namespace dlaunch {

int count_gpus();

}  // namespace dlaunch
