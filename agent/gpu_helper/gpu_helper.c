/* dlaunch-gpu-helper: the part of the agent that loads the host's GPU
   libraries (NVML, the CUDA driver, NCCL). The agent is one static binary
   with no loader, so it cannot dlopen them; it carries this small dynamic
   program inside it and runs it when a check asks for GPU facts or an NCCL
   test. Written in C against glibc's baseline (glibc_baseline.h) so that it
   runs wherever the agent does; the agent talks to it in tab-separated lines
   (agent/gpu_helper_process.h).

     dlaunch-gpu-helper nvml   prints "driver\tTEXT", "cuda\tCODE" and
                               "gpu\tTOTAL\tUSED\tUTIL\tNAME" per GPU;
                               "error\tTEXT" and exit 1 without NVML.
     dlaunch-gpu-helper nccl   reads commands on stdin:
       id                      -> "version\tV", "id\tHEX" (this process then
                                  holds NCCL's bootstrap root: keep it running)
       run\tNRANKS\tFIRST\tGPUS\tWARMUP\tITERS\tHEX\tSIZE,SIZE...
                               -> "version\tV", "time\tBYTES\tNS" per size,
                                  "done"; then the helper exits.
                               Any failure: "error\tTEXT", exit 1. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if DLAUNCH_HAVE_NCCL
#include <cuda.h>
#include <nccl.h>
#endif

static int fail(const char* format, ...) {
  char text[512];
  va_list args;
  va_start(args, format);
  vsnprintf(text, sizeof text, format, args);
  va_end(args);
  for (char* c = text; *c; ++c)
    if (*c == '\n' || *c == '\t') *c = ' ';
  printf("error\t%s\n", text);
  fflush(stdout);
  return 1;
}

static void* open_first(const char* const* names) {
  for (; *names; ++names) {
    void* handle = dlopen(*names, RTLD_NOW | RTLD_GLOBAL);
    if (handle) return handle;
  }
  return NULL;
}

/* The first symbol that was not found, for the error. */
static const char* missing_symbol;

/* dlsym's answer into a function pointer, the way POSIX allows it: a cast
   from void* to a function pointer is not C. */
static void load_symbol(void* out, size_t size, void* lib, const char* name) {
  void* symbol = dlsym(lib, name);
  if (!symbol && !missing_symbol) missing_symbol = name;
  memcpy(out, &symbol, size);
}
#define LOAD(var, lib, name) load_symbol(&(var), sizeof(var), (lib), (name))

/* NVML's few entry points, with its C types (nvmlReturn_t is an int, 0 is
   success; devices are opaque pointers). */
struct nvml_memory {
  unsigned long long total, free, used;
};
struct nvml_utilization {
  unsigned int gpu, memory;
};

static void printable(char* text) {
  for (char* c = text; *c; ++c)
    if (*c == '\n' || *c == '\t' || *c == '\r') *c = ' ';
}

static int nvml(void) {
  static const char* const names[] = {"libnvidia-ml.so.1", NULL};
  void* lib = open_first(names);
  if (!lib) return fail("cannot load NVML (libnvidia-ml.so.1): no NVIDIA driver on this host?");
  int (*init)(void), (*shutdown)(void), (*count)(unsigned*), (*handle)(unsigned, void**);
  int (*name)(void*, char*, unsigned), (*memory)(void*, struct nvml_memory*);
  int (*utilization)(void*, struct nvml_utilization*), (*driver)(char*, unsigned), (*cuda)(int*);
  LOAD(init, lib, "nvmlInit_v2");
  LOAD(shutdown, lib, "nvmlShutdown");
  LOAD(count, lib, "nvmlDeviceGetCount_v2");
  LOAD(handle, lib, "nvmlDeviceGetHandleByIndex_v2");
  LOAD(name, lib, "nvmlDeviceGetName");
  LOAD(memory, lib, "nvmlDeviceGetMemoryInfo");
  LOAD(utilization, lib, "nvmlDeviceGetUtilizationRates");
  LOAD(driver, lib, "nvmlSystemGetDriverVersion");
  LOAD(cuda, lib, "nvmlSystemGetCudaDriverVersion_v2");
  if (!cuda) LOAD(cuda, lib, "nvmlSystemGetCudaDriverVersion");
  if (!init || !shutdown || !count || !handle)
    return fail("NVML lacks nvmlInit_v2 or its device calls");
  if (init() != 0) return fail("nvmlInit failed");
  char text[96] = {0};
  if (driver && driver(text, sizeof text) == 0) {
    printable(text);
    printf("driver\t%s\n", text);
  }
  int version = 0;
  if (cuda && cuda(&version) == 0) printf("cuda\t%d\n", version);
  unsigned n = 0;
  if (count(&n) == 0) {
    for (unsigned i = 0; i < n; ++i) {
      void* device = NULL;
      if (handle(i, &device) != 0) continue;
      char gpu_name[96] = {0};
      if (name && name(device, gpu_name, sizeof gpu_name) != 0) gpu_name[0] = '\0';
      printable(gpu_name);
      struct nvml_memory mem = {0, 0, 0};
      if (memory && memory(device, &mem) != 0) mem.total = mem.used = 0;
      struct nvml_utilization use = {0, 0};
      int percent = -1;
      if (utilization && utilization(device, &use) == 0 && use.gpu <= 100) percent = (int)use.gpu;
      printf("gpu\t%llu\t%llu\t%d\t%s\n", mem.total, mem.used, percent, gpu_name);
    }
  }
  shutdown();
  fflush(stdout);
  return 0;
}

#if DLAUNCH_HAVE_NCCL
/* The entry points the test uses, looked up once. cuda.h maps some names to
   their _v2 entry points; the names looked up below are those. */
static struct {
  __typeof__(&cuInit) cuInit;
  __typeof__(&cuDeviceGetCount) cuDeviceGetCount;
  __typeof__(&cuDeviceGet) cuDeviceGet;
  __typeof__(&cuDevicePrimaryCtxRetain) cuDevicePrimaryCtxRetain;
  __typeof__(&cuCtxSetCurrent) cuCtxSetCurrent;
  __typeof__(&cuMemAlloc) cuMemAlloc;
  __typeof__(&cuMemsetD8) cuMemsetD8;
  __typeof__(&cuStreamCreate) cuStreamCreate;
  __typeof__(&cuStreamSynchronize) cuStreamSynchronize;
  __typeof__(&ncclGetVersion) ncclGetVersion;
  __typeof__(&ncclGetUniqueId) ncclGetUniqueId;
  __typeof__(&ncclCommInitRank) ncclCommInitRank;
  __typeof__(&ncclAllReduce) ncclAllReduce;
  __typeof__(&ncclGroupStart) ncclGroupStart;
  __typeof__(&ncclGroupEnd) ncclGroupEnd;
  __typeof__(&ncclGetErrorString) ncclGetErrorString;
} api;

/* Where the build found NCCL, then the loader's path, then CUDA's usual home. */
static const char* const nccl_names[] = {
#ifdef DLAUNCH_NCCL_LIBRARY_DIR
    DLAUNCH_NCCL_LIBRARY_DIR "/libnccl.so.2",
#endif
    "libnccl.so.2",
    "/usr/local/cuda/lib64/libnccl.so.2",
    "/usr/local/cuda/targets/x86_64-linux/lib/libnccl.so.2",
    "/usr/local/cuda/targets/sbsa-linux/lib/libnccl.so.2",
    NULL};

static int load_nccl(void) {
  static const char* const cuda_names[] = {"libcuda.so.1", NULL};
  void* cuda = open_first(cuda_names);
  if (!cuda)
    return fail("cannot load the CUDA driver (libcuda.so.1): no NVIDIA driver on this host?");
  void* nccl = open_first(nccl_names);
  if (!nccl) return fail("cannot load NCCL (libnccl.so.2, also looked in /usr/local/cuda/lib64)");
  LOAD(api.cuInit, cuda, "cuInit");
  LOAD(api.cuDeviceGetCount, cuda, "cuDeviceGetCount");
  LOAD(api.cuDeviceGet, cuda, "cuDeviceGet");
  LOAD(api.cuDevicePrimaryCtxRetain, cuda, "cuDevicePrimaryCtxRetain");
  LOAD(api.cuCtxSetCurrent, cuda, "cuCtxSetCurrent");
  LOAD(api.cuMemAlloc, cuda, "cuMemAlloc_v2");
  LOAD(api.cuMemsetD8, cuda, "cuMemsetD8_v2");
  LOAD(api.cuStreamCreate, cuda, "cuStreamCreate");
  LOAD(api.cuStreamSynchronize, cuda, "cuStreamSynchronize");
  LOAD(api.ncclGetVersion, nccl, "ncclGetVersion");
  LOAD(api.ncclGetUniqueId, nccl, "ncclGetUniqueId");
  LOAD(api.ncclCommInitRank, nccl, "ncclCommInitRank");
  LOAD(api.ncclAllReduce, nccl, "ncclAllReduce");
  LOAD(api.ncclGroupStart, nccl, "ncclGroupStart");
  LOAD(api.ncclGroupEnd, nccl, "ncclGroupEnd");
  LOAD(api.ncclGetErrorString, nccl, "ncclGetErrorString");
  if (missing_symbol) return fail("the CUDA driver or NCCL lacks %s", missing_symbol);
  int code = 0;
  /* NCCL_VERSION_CODE: major*10000 + minor*100 + patch since 2.9. */
  if (api.ncclGetVersion(&code) == ncclSuccess)
    printf("version\t%d.%d.%d\n", code / 10000, code / 100 % 100, code % 100);
  return 0;
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

#define MAX_GPUS 64
#define MAX_SIZES 64

static int nccl_failed(const char* what, ncclResult_t r) {
  return fail("%s: %s", what, api.ncclGetErrorString(r));
}

static int cuda_failed(const char* what, CUresult r) {
  return fail("%s failed with CUDA error %d", what, (int)r);
}

static ncclResult_t all_reduce(ncclComm_t* comms, CUdeviceptr* send, CUdeviceptr* recv,
                               CUstream* streams, int n, long long bytes) {
  size_t count = (size_t)bytes / sizeof(float);
  api.ncclGroupStart();
  for (int i = 0; i < n; ++i) {
    ncclResult_t r = api.ncclAllReduce((const void*)send[i], (void*)recv[i], count, ncclFloat,
                                       ncclSum, comms[i], streams[i]);
    if (r != ncclSuccess) {
      api.ncclGroupEnd();
      return r;
    }
  }
  return api.ncclGroupEnd();
}

/* "run\tNRANKS\tFIRST\tGPUS\tWARMUP\tITERS\tHEX\tSIZES": the whole test. */
static int run(char* line) {
  char* fields[8];
  int count = 0;
  for (char *save = NULL, *f = strtok_r(line, "\t", &save); f && count < 8;
       f = strtok_r(NULL, "\t", &save))
    fields[count++] = f;
  if (count != 8) return fail("the agent sent a run line with %d fields, not 8", count);
  int nranks = atoi(fields[1]), first = atoi(fields[2]), gpus = atoi(fields[3]);
  int warmup = atoi(fields[4]), iterations = atoi(fields[5]);
  ncclUniqueId id;
  if (strlen(fields[6]) != 2 * sizeof id.internal) return fail("the agent sent a bad unique id");
  for (size_t i = 0; i < sizeof id.internal; ++i) {
    int high = hex_value(fields[6][2 * i]), low = hex_value(fields[6][2 * i + 1]);
    if (high < 0 || low < 0) return fail("the agent sent a bad unique id");
    id.internal[i] = (char)(high * 16 + low);
  }
  long long sizes[MAX_SIZES];
  int n_sizes = 0;
  long long max_bytes = 8;
  for (char *save = NULL, *s = strtok_r(fields[7], ",", &save); s && n_sizes < MAX_SIZES;
       s = strtok_r(NULL, ",", &save)) {
    sizes[n_sizes] = atoll(s);
    if (sizes[n_sizes] > max_bytes) max_bytes = sizes[n_sizes];
    ++n_sizes;
  }
  if (gpus < 1 || gpus > MAX_GPUS) return fail("the test asks for %d GPUs here", gpus);
  CUresult cr = api.cuInit(0);
  if (cr != CUDA_SUCCESS) return cuda_failed("cuInit", cr);
  int devices = 0;
  if ((cr = api.cuDeviceGetCount(&devices)) != CUDA_SUCCESS)
    return cuda_failed("cuDeviceGetCount", cr);
  if (devices < gpus)
    return fail("CUDA sees %d GPUs here, the test wants %d (CUDA_VISIBLE_DEVICES?)", devices, gpus);
  CUcontext contexts[MAX_GPUS];
  CUstream streams[MAX_GPUS];
  CUdeviceptr send[MAX_GPUS], recv[MAX_GPUS];
  ncclComm_t comms[MAX_GPUS];
  for (int i = 0; i < gpus; ++i) {
    CUdevice device = 0;
    if ((cr = api.cuDeviceGet(&device, i)) != CUDA_SUCCESS) return cuda_failed("cuDeviceGet", cr);
    if ((cr = api.cuDevicePrimaryCtxRetain(&contexts[i], device)) != CUDA_SUCCESS)
      return cuda_failed("cuDevicePrimaryCtxRetain", cr);
    api.cuCtxSetCurrent(contexts[i]);
    if ((cr = api.cuStreamCreate(&streams[i], CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS)
      return cuda_failed("cuStreamCreate", cr);
    if ((cr = api.cuMemAlloc(&send[i], (size_t)max_bytes)) != CUDA_SUCCESS ||
        (cr = api.cuMemAlloc(&recv[i], (size_t)max_bytes)) != CUDA_SUCCESS)
      return cuda_failed("cuMemAlloc", cr);
    api.cuMemsetD8(send[i], 0, (size_t)max_bytes);
    api.cuMemsetD8(recv[i], 0, (size_t)max_bytes);
  }
  /* One thread, several GPUs: their initialisations inside one group. */
  api.ncclGroupStart();
  for (int i = 0; i < gpus; ++i) {
    api.cuCtxSetCurrent(contexts[i]);
    ncclResult_t r = api.ncclCommInitRank(&comms[i], nranks, id, first + i);
    if (r != ncclSuccess) {
      api.ncclGroupEnd();
      return nccl_failed("ncclCommInitRank", r);
    }
  }
  ncclResult_t r = api.ncclGroupEnd();
  if (r != ncclSuccess) return nccl_failed("ncclCommInitRank", r);
  for (int s = 0; s < n_sizes; ++s) {
    for (int w = 0; w < warmup; ++w)
      if ((r = all_reduce(comms, send, recv, streams, gpus, sizes[s])) != ncclSuccess)
        return nccl_failed("ncclAllReduce", r);
    for (int i = 0; i < gpus; ++i) api.cuStreamSynchronize(streams[i]);
    long long start = now_ns();
    for (int it = 0; it < iterations; ++it)
      if ((r = all_reduce(comms, send, recv, streams, gpus, sizes[s])) != ncclSuccess)
        return nccl_failed("ncclAllReduce", r);
    for (int i = 0; i < gpus; ++i) api.cuStreamSynchronize(streams[i]);
    long long took = now_ns() - start;
    printf("time\t%lld\t%lld\n", sizes[s], iterations > 0 ? took / iterations : 0);
  }
  /* The process ends next: the driver frees contexts, streams and memory. */
  printf("done\n");
  fflush(stdout);
  return 0;
}

static int nccl(void) {
  if (load_nccl() != 0) return 1;
  fflush(stdout);
  char line[4096];
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\n")] = '\0';
    if (strcmp(line, "id") == 0) {
      ncclUniqueId id;
      ncclResult_t r = api.ncclGetUniqueId(&id);
      if (r != ncclSuccess) return nccl_failed("ncclGetUniqueId", r);
      printf("id\t");
      for (size_t i = 0; i < sizeof id.internal; ++i) printf("%02x", (unsigned char)id.internal[i]);
      printf("\n");
      fflush(stdout);
    } else if (strncmp(line, "run\t", 4) == 0) {
      return run(line);
    } else {
      return fail("unknown command from the agent: %.40s", line);
    }
  }
  return 0; /* the agent closed our input: the test was called off */
}
#else
static int nccl(void) {
  return fail(
      "this dlaunch-agent was built without NCCL (CUDA's and NCCL's headers were not found when it "
      "was built)");
}
#endif

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "nvml") == 0) return nvml();
  if (argc == 2 && strcmp(argv[1], "nccl") == 0) return nccl();
  fprintf(stderr, "dlaunch-gpu-helper: run by dlaunch-agent only (nvml | nccl)\n");
  return 2;
}
