// The hosts of a Slurm allocation, from the variables Slurm puts in a job's
// environment: SLURM_JOB_NODELIST (a hostlist expression) and the rank count
// per node. Pure: the variables come in as a map, so every shape is a unit
// test and nothing here reads the process environment.
//
// Hostlist expressions, with the meaning Slurm's hostlist.c gives them:
//
//   gpu01                 one name
//   a,b c                 several names; commas, spaces, tabs and newlines
//                         separate them
//   gpu[01-04,07]         a bracket group of numbers and ranges separated by
//                         commas: gpu01 gpu02 gpu03 gpu04 gpu07. The digits of
//                         a number or range's low end set the width, so the
//                         zero of 01-04 is kept and 8-10 gives 8 9 10
//   gpu[1-2]x             text may follow a group: gpu1x gpu2x
//   r[1-2]n[01-02]        several groups give every combination, the first
//                         group outermost: r1n01 r1n02 r2n01 r2n02
//
// Refused, with the reason and where: an empty item (two commas with no host
// between them, or one at either end: a typo, refused as -H refuses it; Slurm
// itself never writes one), a list naming no host, a '[' without ']' or
// a ']' without '[', brackets inside brackets, empty groups or ranges,
// anything but digits, '-' and ',' inside brackets, a range whose end is below
// its start, numbers of more than 18 digits, and an expression naming more than
// kMaxHostlistHosts hosts (the largest machines have tens of thousands of
// nodes; the limit keeps a typo such as n[0-999999999] from filling memory).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/hosts/hosts_file.h"

namespace dlaunch {

inline constexpr std::size_t kMaxHostlistHosts = 100'000;

struct HostlistExpansion {
  std::vector<std::string> hosts;
  std::string error;  // empty: `hosts` holds the names, in Slurm's order
};

// Every name of a hostlist expression, in order; duplicates are kept (the
// caller decides what they mean).
HostlistExpansion expand_hostlist(std::string_view text, std::size_t max_hosts = kMaxHostlistHosts);

struct TaskCounts {
  std::vector<int> counts;
  std::string error;  // empty: `counts` holds one count per node
};

// Slurm's compressed per-node counts, as in SLURM_TASKS_PER_NODE:
// "2(x3),1" -> 2 2 2 1. Each count is 1..kMaxSlots; at most `max_nodes` in all.
TaskCounts expand_tasks_per_node(std::string_view text, std::size_t max_nodes = kMaxHostlistHosts);

using Environment = std::map<std::string, std::string>;

// The variables slurm_hosts reads, for the caller that fills the map.
inline constexpr std::string_view kSlurmVariables[] = {
    "SLURM_JOB_ID",       "SLURM_JOB_NODELIST",   "SLURM_NTASKS_PER_NODE",
    "SLURM_GPUS_ON_NODE", "SLURM_TASKS_PER_NODE",
};

// One HostEntry per node of SLURM_JOB_NODELIST (name and address the node's
// name, line its position in the list), with slots from the first of
// SLURM_NTASKS_PER_NODE (one count for every node, or one per node),
// SLURM_GPUS_ON_NODE (when above 0) and SLURM_TASKS_PER_NODE (one per node, in
// order); none set: slots stay unset, one rank per GPU. SLURM_GPUS_ON_NODE,
// when set, is every node's `gpus` too (it counts the batch host's; Slurm
// gives no per-node list). Errors name the variable and quote its text. The
// HostsFile's path is "SLURM_JOB_NODELIST". Every host's transport is
// TransportKind::slurm: its agent starts under srun.
HostsFileResult slurm_hosts(const Environment& env);

}  // namespace dlaunch
