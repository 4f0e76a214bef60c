// What `dlaunch check` and `dlaunch top node` report about a host, collected
// by its agent before it joins: OS and kernel, CPUs, GPUs with driver and CUDA
// versions, architecture and C library, memory in use and utilization (NVML, through the GPU
// helper: a host without it has no GPUs, never an error) and the dlaunch job whose rank holds each
// (gpu_holders.h; only processes this user may inspect), free space in $HOME and /tmp, the size of
// /dev/shm, and the python3 and torch versions on PATH. The clock is read when the coordinator asks
// (see FactsRequest).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/messages.h"

namespace dlaunch {

// Everything but wall_clock_us. Blocks for up to `python_timeout` (importing
// torch from a cold cache takes seconds).
// `python`: the interpreter whose version and torch are reported (a name is
// looked up on PATH).
proto::HostFacts collect_host_facts(std::chrono::milliseconds python_timeout,
                                    const std::string& python = "python3");

// The host's time of day in microseconds since the epoch.
std::int64_t wall_clock_us();

// Pure helpers, unit-tested.
// PRETTY_NAME of an os-release file ("Debian GNU/Linux 12 (bookworm)"), quotes
// and escapes removed; else NAME and VERSION_ID; empty when neither is there.
std::string parse_os_release(std::string_view text);
// The three lines the python3 snippet prints: its version, its path
// (sys.executable), then torch's version or an empty line. Strips whitespace,
// cuts to proto::kMaxFactText.
void parse_python_output(std::string_view text, std::string& python, std::string& path,
                         std::string& torch);
// NVML's CUDA driver version (12040) as "12.4".
std::string cuda_version_text(int version);
// Cuts `text` to proto::kMaxFactText bytes.
std::string fact_text(std::string_view text);
// glibc's version ("2.31") from the bytes of its libc.so.6; empty when none.
std::string glibc_version_in(std::string_view libc_bytes);
// The host's C library: "glibc 2.31" (its libc.so.6 read, not loaded: the
// agent is static), "musl", or empty when there is none.
std::string host_libc();

}  // namespace dlaunch
