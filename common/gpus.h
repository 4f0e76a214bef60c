// How many GPUs this host offers to the job: the devices listed in
// CUDA_VISIBLE_DEVICES when set, else the NVIDIA device nodes present.
#pragma once

namespace dlaunch {

int count_gpus();

// The NVIDIA device nodes of this machine (/dev/nvidia0, /dev/nvidia1, ...),
// whatever this process's CUDA_VISIBLE_DEVICES says.
int count_gpu_devices();

}  // namespace dlaunch
