#include "launcher/config/torchrun_flags.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "common/text.h"
#include "launcher/config/flags_without_effect.h"
#include "launcher/config/options.h"

namespace dlaunch {
namespace {

// torchrun's flags that tune torchrun's own agent, and why each changes
// nothing under dlaunch's.
constexpr FlagWithoutEffect kTorchrunWithoutEffect[] = {
    {"--monitor-interval,--monitor_interval", "--monitor-interval", true,
     "dlaunch's agent reacts to exits at once"},
    {"--start-method,--start_method", "--start-method", true,
     "each rank is a process of its own, started by fork and exec"},
    {"--event-log-handler,--event_log_handler", "--event-log-handler", true,
     "dlaunch records the job's events in its record (dlaunch get JOB)"},
    {"--logs-specs,--logs_specs", "--logs-specs", true,
     "each rank's output goes to its own log file (dlaunch logs JOB)"},
    {"--numa-binding,--numa_binding", "--numa-binding", true,
     "dlaunch does not bind ranks to NUMA nodes; start the program under numactl for that"},
    {"--signals-to-handle,--signals_to_handle", "--signals-to-handle", true,
     "dlaunch stops every rank on SIGINT and SIGTERM (SIGTERM, then SIGKILL after --grace), "
     "and a SIGHUP leaves the job running"},
    {"--duplicate-stdout-filters,--duplicate_stdout_filters", "--duplicate-stdout-filters", true,
     "every rank's whole output is in its log; search it with dlaunch logs JOB"},
    {"--duplicate-stderr-filters,--duplicate_stderr_filters", "--duplicate-stderr-filters", true,
     "every rank's whole output is in its log; search it with dlaunch logs JOB"},
    {"--virtual-local-rank,--virtual_local_rank", "--virtual-local-rank", false,
     "each rank keeps its LOCAL_RANK and sees every GPU of its set, so a program that uses "
     "cuda:LOCAL_RANK gets the same GPU"},
    {"--use-env,--use_env", "--use-env", false,
     "every rank gets LOCAL_RANK in its environment (torch.distributed.launch's flag)"},
};

std::optional<int> small_number(const std::string& text, int most) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  const long n = std::stol(text);
  if (n > most) return std::nullopt;
  return static_cast<int>(n);
}

// "HOST", "HOST:PORT", "[V6]" or "[V6]:PORT".
struct Endpoint {
  std::string host;
  std::optional<int> port;
};

std::optional<Endpoint> parse_endpoint(const std::string& text) {
  Endpoint e;
  std::string rest;
  if (text.starts_with('[')) {
    const auto close = text.find(']');
    if (close == std::string::npos) return std::nullopt;
    e.host = text.substr(1, close - 1);
    rest = text.substr(close + 1);
    if (!rest.empty() && !rest.starts_with(':')) return std::nullopt;
  } else {
    const auto colon = text.find(':');
    if (colon != std::string::npos && text.find(':', colon + 1) != std::string::npos) {
      e.host = text;  // a bare IPv6 address
    } else {
      e.host = text.substr(0, colon);
      if (colon != std::string::npos) rest = text.substr(colon);
    }
  }
  if (e.host.empty()) return std::nullopt;
  if (!rest.empty()) {
    e.port = small_number(rest.substr(1), 65535);
    if (!e.port) return std::nullopt;
  }
  return e;
}

// A job name from --rdzv-id: what a name may not hold becomes '-'.
std::string name_from_id(const std::string& id) {
  std::string name = id;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '-';
  }
  if (name.starts_with('.') || name.starts_with('-')) name = "job" + name;
  return name;
}

std::optional<bool> truth(const std::string& text) {
  const auto t = ascii_lower(text);
  if (t == "1" || t == "true" || t == "yes" || t == "y") return true;
  if (t == "0" || t == "false" || t == "no" || t == "n") return false;
  return std::nullopt;
}

// torchrun's --rdzv-conf: "key=value,key=value".
Result<void> apply_rdzv_conf(const std::string& text, Options& o) {
  std::size_t start = 0;
  while (start < text.size()) {
    auto comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      return fail("--rdzv-conf: expected key=value,key=value, got '" + item + "'");
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    if (key == "timeout" || key == "join_timeout" || key == "last_call_timeout") {
      const auto seconds = small_number(value, 86400 * 7);
      if (!seconds || *seconds < 1)
        return fail("--rdzv-conf " + key + "=" + value + ": expected whole seconds from 1");
      if (key == "last_call_timeout") {
        o.join_timeout_s = *seconds;
      } else {
        o.rdzv_timeout_s = *seconds;
      }
    } else if (key == "is_host") {
      const auto is_host = truth(value);
      if (!is_host) return fail("--rdzv-conf is_host=" + value + ": expected true or false");
      o.rdzv_is_host = *is_host;
    } else {
      o.notes.push_back("torchrun's --rdzv-conf " + key +
                        " has no effect: dlaunch's rendezvous takes timeout (--rdzv-timeout), "
                        "last_call_timeout (--join-timeout) and is_host");
    }
  }
  return {};
}

}  // namespace

void add_torchrun_options(CLI::App& app, TorchrunFlags& f) {
  const std::string group = "torchrun's flags";
  app.add_flag("--standalone", f.standalone, "one machine (as torchrun --standalone)")
      ->group(group);
  app.add_option("--rdzv-backend,--rdzv_backend", f.rdzv_backend,
                 "c10d or static: both are dlaunch's own rendezvous on node 0")
      ->group(group);
  app.add_option("--rdzv-endpoint,--rdzv_endpoint", f.rdzv_endpoint,
                 "HOST[:PORT], node 0's rendezvous (manual mode, default port 29400): the node "
                 "that holds HOST is node 0, the others take node ranks as they join")
      ->group(group);
  app.add_option("--rdzv-id,--rdzv_id", f.rdzv_id, "the job's name, when --name is not given")
      ->group(group);
  app.add_option("--rdzv-conf,--rdzv_conf", f.rdzv_conf,
                 "timeout=S (as --rdzv-timeout), last_call_timeout=S (as --join-timeout), "
                 "is_host=true|false (this node is node 0)")
      ->group(group);
  app.add_flag("--run-path,--run_path", f.run_path, "run the program with Python, .py or not")
      ->group(group);
  app.add_option("-r,--redirects", f.redirects,
                 "keep these streams of these local ranks off the terminal (they are in the "
                 "rank logs): 1 stdout, 2 stderr, 3 both, or LOCAL:N,...")
      ->group(group);
  app.add_option("-t,--tee", f.tee, "accepted: dlaunch always writes the rank logs as well")
      ->group(group);
  app.add_option("--local-ranks-filter,--local_ranks_filter", f.local_ranks_filter,
                 "only these local ranks (on every node) reach the terminal, e.g. 0 or 0,1")
      ->group(group);
  app.add_option("--local-addr,--local_addr", f.local_addr,
                 "on node 0: the MASTER_ADDR to try first")
      ->group(group);
  app.add_option("--role", f.role, "the ranks' ROLE_NAME (default 'default')")->group(group);
  add_flags_without_effect(app, "torchrun", kTorchrunWithoutEffect, group, f.without_effect);
}

std::optional<StreamSpec> parse_stream_spec(const std::string& text) {
  StreamSpec spec;
  if (const auto all = small_number(text, 3)) {
    spec.all = *all;
    return spec;
  }
  std::size_t start = 0;
  while (start <= text.size()) {
    auto comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    const auto colon = item.find(':');
    if (colon == std::string::npos) return std::nullopt;
    const auto rank = small_number(item.substr(0, colon), 1 << 20);
    const auto streams = small_number(item.substr(colon + 1), 3);
    if (!rank || !streams) return std::nullopt;
    spec.by_local_rank[*rank] = *streams;
    if (comma == text.size()) break;
    start = comma + 1;
  }
  return spec;
}

Result<void> apply_torchrun_flags(const TorchrunFlags& f, Options& o) {
  for (const auto& note : f.without_effect) o.notes.push_back(note);
  const bool several_nodes = o.nnodes > 1 || o.max_nodes > 1;
  if (f.standalone) {
    if (several_nodes)
      return fail(std::string("--standalone runs on this machine only: drop --nnodes"));
    o.standalone = true;
  }
  if (!f.rdzv_backend.empty()) {
    const auto backend = ascii_lower(f.rdzv_backend);
    if (backend.starts_with("etcd")) {
      return fail("--rdzv-backend " + f.rdzv_backend +
                  ": dlaunch runs its own rendezvous on node 0 and needs no etcd server; give node "
                  "0's address as --rdzv-endpoint NODE0[:PORT] with --rdzv-backend c10d");
    }
    if (backend != "c10d" && backend != "static") {
      return fail("--rdzv-backend " + f.rdzv_backend +
                  ": expected c10d or static (both are dlaunch's own rendezvous on node 0)");
    }
  }
  if (!f.rdzv_endpoint.empty() && !f.standalone) {
    const auto endpoint = parse_endpoint(f.rdzv_endpoint);
    if (!endpoint) {
      return fail("--rdzv-endpoint " + f.rdzv_endpoint +
                  ": expected HOST[:PORT] (node 0's address)");
    }
    // One node needs no endpoint (torchrun's single-node lines often name
    // localhost:0); over several it is node 0's rendezvous.
    if (several_nodes) {
      if (!o.master_addr.empty() && o.master_addr != endpoint->host) {
        o.notes.push_back("--master-addr " + o.master_addr + " is not used: --rdzv-endpoint " +
                          f.rdzv_endpoint + " names node 0 (as torchrun does)");
      }
      o.master_addr = endpoint->host;
      if (endpoint->port && !o.rdzv_port_given) {
        if (*endpoint->port == 0) {
          return fail("--rdzv-endpoint " + f.rdzv_endpoint +
                      ": port 0 cannot be agreed on by several nodes; give a port, or leave it out "
                      "for 29400");
        }
        o.rdzv_port = *endpoint->port;
        o.rdzv_port_given = true;
      }
      o.rdzv_endpoint = f.rdzv_endpoint;
    }
  }
  if (!f.rdzv_id.empty() && o.name.empty()) o.name = name_from_id(f.rdzv_id);
  if (!f.rdzv_conf.empty()) {
    if (auto applied = apply_rdzv_conf(f.rdzv_conf, o); !applied) return applied;
  }
  if (!f.redirects.empty()) {
    const auto spec = parse_stream_spec(f.redirects);
    if (!spec) {
      return fail("-r/--redirects " + f.redirects +
                  ": expected 0 to 3 (1 stdout, 2 stderr, 3 both) or LOCAL_RANK:N,...");
    }
    o.hidden_streams = spec->all;
    o.hidden_streams_by_local_rank = spec->by_local_rank;
    o.notes.push_back("-r/--redirects " + f.redirects +
                      ": those streams stay off the terminal; every rank's whole output is in "
                      "its log (dlaunch logs JOB)");
  }
  if (!f.tee.empty()) {
    const auto tee = parse_stream_spec(f.tee);
    if (!tee) {
      return fail("-t/--tee " + f.tee +
                  ": expected 0 to 3 (1 stdout, 2 stderr, 3 both) or LOCAL_RANK:N,...");
    }
    if (f.redirects.empty()) {
      o.notes.push_back(
          "torchrun's -t/--tee has no effect: dlaunch always writes every rank's output to its "
          "log (dlaunch logs JOB) as well as to the terminal");
    } else {
      // A stream both redirected and teed is shown, as torchrun's tee wins.
      for (const auto& [rank, streams] : tee->by_local_rank)
        o.hidden_streams_by_local_rank.try_emplace(rank, o.hidden_streams);
      for (auto& [rank, hidden] : o.hidden_streams_by_local_rank) {
        const auto teed = tee->by_local_rank.find(rank);
        hidden &= ~(tee->all | (teed != tee->by_local_rank.end() ? teed->second : 0));
      }
      o.hidden_streams &= ~tee->all;
      o.notes.push_back("-t/--tee " + f.tee + ": those streams are shown on the terminal as well");
    }
  }
  if (!f.local_ranks_filter.empty()) {
    auto ranks = parse_rank_list(f.local_ranks_filter);
    if (!ranks) {
      return fail("--local-ranks-filter: expected local ranks like 0,1 or 0-3, got '" +
                  f.local_ranks_filter + "'");
    }
    o.local_ranks_filter = *ranks;
  }
  o.local_addr = f.local_addr;
  if (!f.role.empty()) o.env.push_back("ROLE_NAME=" + f.role);
  return {};
}

EnvArguments torchrun_env_arguments(const CLI::App& app) {
  // torchrun's flags (torch.distributed.run), each read from PET_<NAME>.
  static constexpr const char* kNames[] = {"nnodes",
                                           "nproc_per_node",
                                           "rdzv_backend",
                                           "rdzv_endpoint",
                                           "rdzv_id",
                                           "rdzv_conf",
                                           "standalone",
                                           "max_restarts",
                                           "monitor_interval",
                                           "start_method",
                                           "role",
                                           "module",
                                           "no_python",
                                           "run_path",
                                           "log_dir",
                                           "redirects",
                                           "tee",
                                           "local_ranks_filter",
                                           "node_rank",
                                           "master_addr",
                                           "master_port",
                                           "local_addr"};
  EnvArguments out;
  for (const char* name : kNames) {
    std::string variable = "PET_";
    for (const char* c = name; *c != '\0'; ++c)
      variable += static_cast<char>(std::toupper(static_cast<unsigned char>(*c)));
    const char* value = std::getenv(variable.c_str());
    if (value == nullptr) continue;
    const std::string flag = std::string("--") + name;
    const CLI::Option* option = app.get_option_no_throw(flag);
    if (option == nullptr) continue;
    if (option->get_type_size_max() == 0) {  // a switch
      const std::string v = value;
      if (v == "1" || v == "true" || v == "True" || v == "TRUE") out.words.push_back(flag);
    } else {
      out.words.push_back(flag + "=" + value);
    }
    out.said += (out.said.empty() ? "" : ", ") + variable + "=" + value;
  }
  return out;
}

}  // namespace dlaunch
