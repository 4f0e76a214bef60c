#include "agent/nccl_test.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#if DLAUNCH_HAVE_NCCL
#include <cuda.h>
#include <dlfcn.h>
#include <nccl.h>
#endif

namespace dlaunch {

#if DLAUNCH_HAVE_NCCL
namespace {

// The entry points we use, looked up once; the libraries stay loaded for the
// agent's life (the rank-0 host's bootstrap root lives inside NCCL).
struct Api {
  std::string error;  // why not loaded
  decltype(&::cuInit) cuInit = nullptr;
  decltype(&::cuDeviceGetCount) cuDeviceGetCount = nullptr;
  decltype(&::cuDeviceGet) cuDeviceGet = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) cuDevicePrimaryCtxRetain = nullptr;
  decltype(&::cuCtxSetCurrent) cuCtxSetCurrent = nullptr;
  decltype(&::cuMemAlloc) cuMemAlloc = nullptr;
  decltype(&::cuMemFree) cuMemFree = nullptr;
  decltype(&::cuMemsetD8) cuMemsetD8 = nullptr;
  decltype(&::cuStreamCreate) cuStreamCreate = nullptr;
  decltype(&::cuStreamSynchronize) cuStreamSynchronize = nullptr;
  decltype(&::cuStreamDestroy) cuStreamDestroy = nullptr;
  decltype(&::ncclGetVersion) ncclGetVersion = nullptr;
  decltype(&::ncclGetUniqueId) ncclGetUniqueId = nullptr;
  decltype(&::ncclCommInitRank) ncclCommInitRank = nullptr;
  decltype(&::ncclCommDestroy) ncclCommDestroy = nullptr;
  decltype(&::ncclAllReduce) ncclAllReduce = nullptr;
  decltype(&::ncclGroupStart) ncclGroupStart = nullptr;
  decltype(&::ncclGroupEnd) ncclGroupEnd = nullptr;
  decltype(&::ncclGetErrorString) ncclGetErrorString = nullptr;
};

void* open_first(const std::vector<std::string>& names) {
  for (const auto& name : names) {
    if (void* handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_GLOBAL)) return handle;
  }
  return nullptr;
}

// Where the build found NCCL, then the loader's path, then CUDA's usual home.
std::vector<std::string> nccl_names() {
  std::vector<std::string> names;
#ifdef DLAUNCH_NCCL_LIBRARY_DIR
  names.push_back(std::string(DLAUNCH_NCCL_LIBRARY_DIR) + "/libnccl.so.2");
#endif
  names.push_back("libnccl.so.2");
  names.push_back("/usr/local/cuda/lib64/libnccl.so.2");
  names.push_back("/usr/local/cuda/targets/x86_64-linux/lib/libnccl.so.2");
  return names;
}

template <class F>
bool find(void* handle, const char* name, F& out, std::string& missing) {
  out = reinterpret_cast<F>(::dlsym(handle, name));
  if (out == nullptr && missing.empty()) missing = name;
  return out != nullptr;
}

const Api& api() {
  static const Api loaded = [] {
    Api a;
    void* cuda = open_first({"libcuda.so.1"});
    if (cuda == nullptr) {
      a.error = "cannot load the CUDA driver (libcuda.so.1): no NVIDIA driver on this host?";
      return a;
    }
    void* nccl = open_first(nccl_names());
    if (nccl == nullptr) {
      a.error = "cannot load NCCL (libnccl.so.2, also looked in /usr/local/cuda/lib64)";
      return a;
    }
    std::string missing;
    // cuda.h maps these names to their _v2 entry points.
    find(cuda, "cuInit", a.cuInit, missing);
    find(cuda, "cuDeviceGetCount", a.cuDeviceGetCount, missing);
    find(cuda, "cuDeviceGet", a.cuDeviceGet, missing);
    find(cuda, "cuDevicePrimaryCtxRetain", a.cuDevicePrimaryCtxRetain, missing);
    find(cuda, "cuCtxSetCurrent", a.cuCtxSetCurrent, missing);
    find(cuda, "cuMemAlloc_v2", a.cuMemAlloc, missing);
    find(cuda, "cuMemFree_v2", a.cuMemFree, missing);
    find(cuda, "cuMemsetD8_v2", a.cuMemsetD8, missing);
    find(cuda, "cuStreamCreate", a.cuStreamCreate, missing);
    find(cuda, "cuStreamSynchronize", a.cuStreamSynchronize, missing);
    find(cuda, "cuStreamDestroy_v2", a.cuStreamDestroy, missing);
    find(nccl, "ncclGetVersion", a.ncclGetVersion, missing);
    find(nccl, "ncclGetUniqueId", a.ncclGetUniqueId, missing);
    find(nccl, "ncclCommInitRank", a.ncclCommInitRank, missing);
    find(nccl, "ncclCommDestroy", a.ncclCommDestroy, missing);
    find(nccl, "ncclAllReduce", a.ncclAllReduce, missing);
    find(nccl, "ncclGroupStart", a.ncclGroupStart, missing);
    find(nccl, "ncclGroupEnd", a.ncclGroupEnd, missing);
    find(nccl, "ncclGetErrorString", a.ncclGetErrorString, missing);
    if (!missing.empty()) a.error = "the CUDA driver or NCCL lacks " + missing;
    return a;
  }();
  return loaded;
}

std::string version_text(const Api& a) {
  int code = 0;
  if (a.ncclGetVersion(&code) != ncclSuccess) return "";
  // NCCL_VERSION_CODE: major*10000 + minor*100 + patch since 2.9.
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

// One test, on the calling thread; the report's error says what failed.
proto::NcclReport run(const proto::NcclTest& test) {
  proto::NcclReport report;
  const Api& a = api();
  if (!a.error.empty()) {
    report.error = a.error;
    return report;
  }
  report.version = version_text(a);
  // NCCL reads its settings from the environment when first used.
  if (!test.socket_ifname.empty()) ::setenv("NCCL_SOCKET_IFNAME", test.socket_ifname.c_str(), 0);
  const auto nccl_failed = [&](const char* what, ncclResult_t r) {
    report.error = std::string(what) + ": " + a.ncclGetErrorString(r);
    return report;
  };
  if (test.unique_id.empty()) {
    ncclUniqueId id;
    if (auto r = a.ncclGetUniqueId(&id); r != ncclSuccess) return nccl_failed("ncclGetUniqueId", r);
    report.unique_id.assign(id.internal, sizeof id.internal);
    return report;
  }
  static_assert(sizeof(ncclUniqueId) == proto::kNcclUniqueIdBytes);
  const auto cuda_failed = [&](const char* what, CUresult r) {
    report.error = std::string(what) + " failed with CUDA error " + std::to_string(r);
    return report;
  };
  if (auto r = a.cuInit(0); r != CUDA_SUCCESS) return cuda_failed("cuInit", r);
  int devices = 0;
  if (auto r = a.cuDeviceGetCount(&devices); r != CUDA_SUCCESS)
    return cuda_failed("cuDeviceGetCount", r);
  if (devices < test.gpus) {
    report.error = "CUDA sees " + std::to_string(devices) + " GPUs here, the test wants " +
                   std::to_string(test.gpus) + " (CUDA_VISIBLE_DEVICES?)";
    return report;
  }
  std::int64_t max_bytes = 8;
  for (auto bytes : test.sizes) max_bytes = std::max(max_bytes, bytes);
  const auto n = static_cast<std::size_t>(test.gpus);
  std::vector<CUcontext> contexts(n);
  std::vector<CUstream> streams(n);
  std::vector<CUdeviceptr> send(n), recv(n);
  std::vector<ncclComm_t> comms(n);
  for (std::size_t i = 0; i < n; ++i) {
    CUdevice device = 0;
    if (auto r = a.cuDeviceGet(&device, static_cast<int>(i)); r != CUDA_SUCCESS)
      return cuda_failed("cuDeviceGet", r);
    if (auto r = a.cuDevicePrimaryCtxRetain(&contexts[i], device); r != CUDA_SUCCESS)
      return cuda_failed("cuDevicePrimaryCtxRetain", r);
    a.cuCtxSetCurrent(contexts[i]);
    if (auto r = a.cuStreamCreate(&streams[i], CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS)
      return cuda_failed("cuStreamCreate", r);
    for (auto* buffer : {&send[i], &recv[i]}) {
      if (auto r = a.cuMemAlloc(buffer, static_cast<std::size_t>(max_bytes)); r != CUDA_SUCCESS)
        return cuda_failed("cuMemAlloc", r);
      a.cuMemsetD8(*buffer, 0, static_cast<std::size_t>(max_bytes));
    }
  }
  ncclUniqueId id;
  std::copy(test.unique_id.begin(), test.unique_id.end(), id.internal);
  // One thread, several GPUs: their initialisations inside one group.
  a.ncclGroupStart();
  for (std::size_t i = 0; i < n; ++i) {
    a.cuCtxSetCurrent(contexts[i]);
    if (auto r =
            a.ncclCommInitRank(&comms[i], test.nranks, id, test.first_rank + static_cast<int>(i));
        r != ncclSuccess) {
      a.ncclGroupEnd();
      return nccl_failed("ncclCommInitRank", r);
    }
  }
  if (auto r = a.ncclGroupEnd(); r != ncclSuccess) return nccl_failed("ncclCommInitRank", r);
  const auto all_reduce = [&](std::int64_t bytes) -> ncclResult_t {
    const auto count = static_cast<std::size_t>(bytes) / sizeof(float);
    a.ncclGroupStart();
    for (std::size_t i = 0; i < n; ++i) {
      const auto r =
          a.ncclAllReduce(reinterpret_cast<const void*>(send[i]), reinterpret_cast<void*>(recv[i]),
                          count, ncclFloat, ncclSum, comms[i], streams[i]);
      if (r != ncclSuccess) {
        a.ncclGroupEnd();
        return r;
      }
    }
    return a.ncclGroupEnd();
  };
  const auto synchronize = [&] {
    for (auto stream : streams) a.cuStreamSynchronize(stream);
  };
  for (auto bytes : test.sizes) {
    for (int w = 0; w < test.warmup; ++w) {
      if (auto r = all_reduce(bytes); r != ncclSuccess) return nccl_failed("ncclAllReduce", r);
    }
    synchronize();
    const auto start = std::chrono::steady_clock::now();
    for (int it = 0; it < test.iterations; ++it) {
      if (auto r = all_reduce(bytes); r != ncclSuccess) return nccl_failed("ncclAllReduce", r);
    }
    synchronize();
    const auto took = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::steady_clock::now() - start);
    report.timings.push_back({bytes, took.count() / test.iterations});
  }
  for (std::size_t i = 0; i < n; ++i) {
    a.cuCtxSetCurrent(contexts[i]);
    a.ncclCommDestroy(comms[i]);
    a.cuMemFree(send[i]);
    a.cuMemFree(recv[i]);
    a.cuStreamDestroy(streams[i]);
  }
  return report;
}

}  // namespace

void run_nccl_test(asio::io_context& io, const proto::NcclTest& test, NcclDone done) {
  // Detached: a peer that never joins leaves ncclCommInitRank waiting, and
  // the coordinator then ends the check (and this process) after its timeout.
  std::thread([&io, test, done = std::move(done)]() mutable {
    auto report = run(test);
    asio::post(io, [done = std::move(done), report = std::move(report)]() mutable {
      done(std::move(report));
    });
  }).detach();
}

#else

void run_nccl_test(asio::io_context& io, const proto::NcclTest&, NcclDone done) {
  asio::post(io, [done = std::move(done)] {
    proto::NcclReport report;
    report.error =
        "this dlaunch-agent was built without NCCL (CUDA's and NCCL's headers were not found "
        "when it was built)";
    done(std::move(report));
  });
}

#endif

}  // namespace dlaunch
