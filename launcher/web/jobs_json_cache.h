// The jobs of a state dir as the JSON of `GET /api/jobs` (each job as
// `dlaunch get --json`), kept between requests: the page asks every 2 s, and
// reading 1,000 records each time (a TOML parse and a directory listing each)
// took 70 ms. An ended job's JSON is reused while nothing it is made of has
// changed (its job.toml, its directory's list of files, its stacks/last.txt);
// an active job's is made again each time, since its status, duration and
// coordinator's liveness move with the clock.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "launcher/record/job_store.h"

namespace dlaunch {

class JobsJsonCache {
 public:
  // The JSON array of every job under `log_dir`, newest first.
  std::string jobs_array(const std::string& log_dir, long long now);

 private:
  struct Key {
    long long record_ns = -1, record_size = -1, record_inode = -1;
    long long dir_ns = -1, stacks_ns = -1;
    bool operator==(const Key&) const = default;
  };
  struct Entry {
    Key key;
    long long started_ms = 0;
    std::string name;
    std::string json;
  };
  static Key key_of(const std::string& dir);

  std::mutex mutex_;                      // requests come from the server's threads
  std::map<std::string, Entry> entries_;  // by job directory
};

}  // namespace dlaunch
