#include <doctest/doctest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "launcher/record/job_record.h"
#include "tests/unit/scratch_dir.h"

using namespace dlaunch;
using dlaunch::testing::read_file;
using dlaunch::testing::ScratchDir;
namespace fs = std::filesystem;

namespace {

// A fresh directory under the temporary directory, removed at the end.

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

JobResult sample_result() {
  JobResult r;
  r.exit_code = 3;
  r.root_cause = "rank 2 on gpu1 exited with code 3";
  r.root_cause_tail = {"Traceback (most recent call last):", "RuntimeError: \"quoted\" \\ x"};
  r.restarts = 2;
  r.world_size = 16;
  r.finished = 1764000000;
  return r;
}

// A result big enough that a small file-size limit cuts its write short.
JobResult large_result() {
  JobResult r = sample_result();
  r.root_cause_tail.assign(200, std::string(100, 'x'));
  return r;
}

// Runs `body` in a child with file writes limited to `max_bytes`, so that the
// record's write stops part-way, and returns the child's wait status.
template <typename Body>
int run_with_file_size_limit(rlim_t max_bytes, bool ignore_sigxfsz, Body body) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, ignore_sigxfsz ? SIG_IGN : SIG_DFL);
    const rlimit limit{max_bytes, max_bytes};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(100);
    ::_exit(body());
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return status;
}

// A record holding `result`, as the coordinator writes it at the end.
Result<void> write_result(const std::string& dir, const JobResult& result) {
  JobInfo info;
  info.name = "job";
  return write_job_record(dir, info, &result);
}

}  // namespace

TEST_CASE("job records: info and result round-trip, private and with no leftovers") {
  ScratchDir dir;
  JobInfo info;
  info.name = "mnist_dist-20261122-173000";
  info.mode = "hosts";
  info.nnodes = 2;
  info.command = {"mnist_dist", "--epochs", "10", "a b"};
  info.coordinator_pid = 4242;
  info.started = 1764000000;
  info.hosts = {"gpu1", "gpu2"};
  info.status = JobStatus::failed;
  info.round = 2;
  info.workdir = "/home/u/w";
  info.tensorboard_dir = "runs";
  info.checkpoint_dir = "ckpt";
  info.detached = true;
  info.nodes = {{"gpu1", 0, 0, 8, 1234, "done", 8}, {"gpu2", 1, 8, 8, 99, "lost"}};
  info.history = {{1764000010, 0, "lost the agent of gpu3: heartbeat timeout (4 s)"},
                  {1764000011, 1, "gpu2 takes node 1 of gpu3 (\"lost\")"}};
  const JobResult written = sample_result();
  CHECK(write_job_record(dir.path(), info, &written).ok());

  const auto read_info = read_job_info(dir.path());
  REQUIRE(read_info.has_value());
  CHECK(read_info->name == info.name);
  CHECK(read_info->mode == info.mode);
  CHECK(read_info->nnodes == info.nnodes);
  CHECK(read_info->command == info.command);
  CHECK(read_info->coordinator_pid == info.coordinator_pid);
  CHECK(read_info->started == info.started);
  CHECK(read_info->hosts == info.hosts);
  CHECK(read_info->status == JobStatus::failed);
  CHECK(read_info->round == 2);
  CHECK(read_info->workdir == info.workdir);
  CHECK(read_info->tensorboard_dir == info.tensorboard_dir);
  CHECK(read_info->checkpoint_dir == info.checkpoint_dir);
  CHECK(read_info->detached);
  CHECK(read_info->nodes == info.nodes);
  CHECK(read_info->history == info.history);

  const auto result = read_job_result(dir.path());
  REQUIRE(result.has_value());
  const JobResult expected = sample_result();
  CHECK(result->exit_code == expected.exit_code);
  CHECK(result->root_cause == expected.root_cause);
  CHECK(result->root_cause_tail == expected.root_cause_tail);
  CHECK(result->restarts == expected.restarts);
  CHECK(result->world_size == expected.world_size);
  CHECK(result->finished == expected.finished);

  CHECK(files_in(dir.path()) == std::vector<std::string>{"job.toml"});
  struct stat st {};
  REQUIRE(::stat((dir.path() + "/job.toml").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
}

TEST_CASE("job records: a rewrite replaces the record") {
  ScratchDir dir;
  REQUIRE(write_result(dir.path(), large_result()).ok());
  REQUIRE(write_result(dir.path(), sample_result()).ok());
  CHECK(read_job_result(dir.path())->root_cause_tail == sample_result().root_cause_tail);
  CHECK(files_in(dir.path()) == std::vector<std::string>{"job.toml"});
}

TEST_CASE("job records: a manual-mode node's own record keeps its job, name and node list") {
  ScratchDir dir;
  JobInfo info;
  info.name = "j1.node1";
  info.mode = "manual";
  info.node_of_job = "j1";
  info.node_name = "node1";
  info.node0 = "10.0.1.2:29400";
  info.nodes = {NodeRecord{"gpu7", 1, -1, 8, 4242, "running", 0}};
  REQUIRE(write_job_record(dir.path(), info).ok());
  const auto back = read_job_info(dir.path());
  REQUIRE(back);
  CHECK(back->node_of_job == "j1");
  CHECK(back->node_name == "node1");
  CHECK(back->node0 == "10.0.1.2:29400");
  CHECK(back->nodes == info.nodes);
  // Node 0's record and every other job's carry none of it.
  JobInfo plain;
  plain.name = "j1";
  REQUIRE(write_job_record(dir.path(), plain).ok());
  CHECK(read_job_info(dir.path())->node_of_job.empty());
  CHECK(read_file(dir.path() + "/job.toml").find("node_of_job") == std::string::npos);
}

TEST_CASE("job records: statuses by name, and what is active") {
  for (auto s : {JobStatus::pending, JobStatus::running, JobStatus::restarting,
                 JobStatus::succeeded, JobStatus::failed, JobStatus::stopped, JobStatus::lost}) {
    CHECK(parse_job_status(job_status_name(s)) == s);
  }
  CHECK(job_status_name(JobStatus::restarting) == "RESTARTING");
  CHECK(parse_job_status("running") == JobStatus::running);
  CHECK_FALSE(parse_job_status("done").has_value());
  CHECK(is_active(JobStatus::pending));
  CHECK(is_active(JobStatus::restarting));
  CHECK_FALSE(is_active(JobStatus::lost));
  CHECK_FALSE(is_active(JobStatus::stopped));
  JobResult r;
  CHECK(final_status(r) == JobStatus::succeeded);
  r.exit_code = 143;
  CHECK(final_status(r) == JobStatus::failed);
  r.interrupted = true;
  CHECK(final_status(r) == JobStatus::stopped);
}

TEST_CASE("job records: an older record's result.toml is still read") {
  ScratchDir dir;
  std::ofstream(dir.path() + "/job.toml") << "name = 'old'\ncoordinator_pid = 1\n";
  std::ofstream(dir.path() + "/result.toml") << "exit_code = 4\nroot_cause = 'x'\n";
  const auto info = read_job_info(dir.path());
  REQUIRE(info);
  CHECK(info->status == JobStatus::running);  // no status: as written before statuses
  const auto result = read_job_result(dir.path());
  REQUIRE(result);
  CHECK(result->exit_code == 4);
}

TEST_CASE("job records: a write that cannot happen is reported, naming the file") {
  SUBCASE("missing directory") {
    ScratchDir dir;
    const std::string missing = dir.path() + "/no-such-job";
    const auto written = write_result(missing, sample_result());
    REQUIRE_FALSE(written.ok());
    CHECK(written.error() ==
          "cannot create a temporary file for " + missing + "/job.toml: No such file or directory");
    CHECK_FALSE(write_job_record(missing, JobInfo{}).ok());
  }
  SUBCASE("a file where the directory should be") {
    ScratchDir dir;
    const std::string file = dir.path() + "/plain-file";
    std::ofstream(file) << "x";
    const auto written = write_job_record(file, JobInfo{});
    REQUIRE_FALSE(written.ok());
    CHECK(written.error().find(file + "/job.toml: Not a directory") != std::string::npos);
  }
  SUBCASE("read-only directory") {
    ScratchDir dir;
    REQUIRE(::chmod(dir.path().c_str(), 0500) == 0);
    // Permissions do not stop root; sysfs refuses new files even to root.
    const std::string read_only = ::geteuid() == 0 ? "/sys" : dir.path();
    const auto written = write_result(read_only, sample_result());
    REQUIRE_FALSE(written.ok());
    CHECK(written.error().find(read_only + "/job.toml: ") != std::string::npos);
    CHECK_FALSE(fs::exists(read_only + "/job.toml"));
  }
}

TEST_CASE("job records: a failed write keeps the old record whole and cleans up") {
  ScratchDir dir;
  REQUIRE(write_result(dir.path(), sample_result()).ok());
  const std::string before = read_file(dir.path() + "/job.toml");

  // With SIGXFSZ ignored, writing past the limit fails with EFBIG, as a full
  // disk fails with ENOSPC.
  const std::string job_dir = dir.path();
  const int status = run_with_file_size_limit(1024, true, [&] {
    const auto written = write_result(job_dir, large_result());
    if (written) return 1;
    return written.error().find("cannot write " + job_dir + "/job.toml: File too large") == 0 ? 0
                                                                                              : 2;
  });
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(read_file(dir.path() + "/job.toml") == before);
  CHECK(files_in(dir.path()) == std::vector<std::string>{"job.toml"});
}

TEST_CASE("job records: a writer killed mid-write never leaves half a file under the name") {
  ScratchDir dir;
  const std::string job_dir = dir.path();

  SUBCASE("no record before") {
    const int status = run_with_file_size_limit(1024, false, [&] {
      (void)write_result(job_dir, large_result());
      return 0;
    });
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGXFSZ);
    CHECK_FALSE(fs::exists(job_dir + "/job.toml"));
    CHECK_FALSE(read_job_result(job_dir).has_value());
  }
  SUBCASE("an old record stays whole") {
    REQUIRE(write_result(job_dir, sample_result()).ok());
    const std::string before = read_file(job_dir + "/job.toml");
    const int status = run_with_file_size_limit(1024, false, [&] {
      (void)write_result(job_dir, large_result());
      return 0;
    });
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGXFSZ);
    CHECK(read_file(job_dir + "/job.toml") == before);
    CHECK(read_job_result(job_dir)->root_cause == sample_result().root_cause);
  }
  // Only the hidden temporary can be left over, and readers never look at it.
  for (const auto& name : files_in(job_dir)) {
    CAPTURE(name);
    CHECK((name == "job.toml" || name.starts_with(".job.toml.")));
  }
}

TEST_CASE("job records: node names that need escaping, and thousands of nodes, read back whole") {
  // Node records are written by hand (fast for big jobs): every name an agent
  // can report must still read back as it was, the result table beside them.
  ScratchDir dir;
  JobInfo info;
  info.name = "job";
  info.nodes = {{"quote\"back\\slash", 0, 0, 2, 11, "done"},
                {"tab\tnew\nline\rcr", 1, 2, 2, 12, "lost"},
                {std::string("ctl\x01\x1f del\x7f", 10), 2, 4, 2, 13, "failed"},
                {"gpu-\xc3\xa9t\xc3\xa9 [[node]] = \"x\"", 3, 6, 2, 14, "running"},
                {"", 4, -1, 0, 0, "pending"}};
  for (int i = 5; i < 5000; ++i)
    info.nodes.push_back({"n" + std::to_string(i), i, i, 1, i, "done"});
  const JobResult result = sample_result();
  REQUIRE(write_job_record(dir.path(), info, &result).ok());
  const auto read_info = read_job_info(dir.path());
  REQUIRE(read_info.has_value());
  CHECK(read_info->nodes == info.nodes);
  REQUIRE(read_job_result(dir.path()).has_value());
  CHECK(read_job_result(dir.path())->root_cause_tail == result.root_cause_tail);
}
