// `dlaunch check --nccl` on one host: this host's GPUs join an NCCL
// communicator spanning every GPU of the hosts and time an all-reduce of each
// size, the way nccl-tests' all_reduce_perf does. The test runs in the GPU
// helper (agent/gpu_helper_process.h), which loads NCCL and the CUDA driver at
// run time, so the agent still starts on hosts without them and says why the
// test cannot run; it is built only where CUDA's and NCCL's headers were found.
#pragma once

#include <asio.hpp>
#include <functional>

#include "protocol/messages.h"

namespace dlaunch {

using NcclDone = std::function<void(proto::NcclReport)>;

// A test without a unique_id asks for one (this host holds rank 0); with one,
// runs the test. Blocking NCCL calls run on a thread of their own; `done` is
// called on `io`'s thread.
void run_nccl_allreduce(asio::io_context& io, const proto::NcclTest& test, NcclDone done);

}  // namespace dlaunch
