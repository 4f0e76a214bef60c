#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "launcher/config/host_source.h"
#include "tests/unit/launcher/hosts/hosts_result.h"

using namespace dlaunch;
using dlaunch::testing::ok;

namespace {

// A file in a fresh temporary directory, removed at the end of the scope.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& text) {
    dir_ = std::filesystem::temp_directory_path() /
           ("dlaunch-host-source-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / name).string();
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::filesystem::remove_all(dir_); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::filesystem::path dir_;
  std::string path_;
};

Options hosts_options(HostSource source) {
  Options o;
  o.mode = Mode::hosts;
  o.host_source = source;
  return o;
}

}  // namespace

TEST_CASE("host source: each source gives the same kind of hosts") {
  TempFile toml("hosts.toml", "[[host]]\naddress = \"a\"\nslots = 2\n[[host]]\naddress = \"b\"\n");
  Options o = hosts_options(HostSource::hosts_file);
  o.hosts_file = toml.path();
  const HostsFile from_toml = ok(load_host_source(o, {}));

  TempFile hostfile("hostfile", "a slots=2\nb\n");
  o = hosts_options(HostSource::hostfile);
  o.hostfile = hostfile.path();
  const HostsFile from_hostfile = ok(load_host_source(o, {}));
  CHECK(from_hostfile.path == hostfile.path());

  o = hosts_options(HostSource::host_list);
  o.host_list = "a:2,b";
  const HostsFile from_h = ok(load_host_source(o, {}));
  CHECK(from_h.path == "-H");

  o = hosts_options(HostSource::slurm);
  const HostsFile from_slurm =
      ok(load_host_source(o, {{"SLURM_JOB_NODELIST", "a,b"}, {"SLURM_NTASKS_PER_NODE", "2,1"}}));
  CHECK(from_slurm.path == "SLURM_JOB_NODELIST");

  for (const HostsFile* file : {&from_toml, &from_hostfile, &from_h, &from_slurm}) {
    INFO("source: ", file->path);
    REQUIRE(file->hosts.size() == 2);
    CHECK(file->hosts[0].name == "a");
    CHECK(file->hosts[0].address == "a");
    CHECK(file->hosts[0].slots == 2);
    CHECK(file->hosts[1].name == "b");
  }
  CHECK_FALSE(from_h.hosts[1].slots.has_value());
  CHECK(from_slurm.hosts[1].slots == 1);
}

TEST_CASE("host source: --include and --exclude apply to every source") {
  Options o = hosts_options(HostSource::slurm);
  o.include = "n2:0,1";
  const HostsFile slurm =
      ok(load_host_source(o, {{"SLURM_JOB_NODELIST", "n[1-3]"}, {"SLURM_GPUS_ON_NODE", "4"}}));
  REQUIRE(slurm.hosts.size() == 1);
  CHECK(slurm.hosts[0].name == "n2");
  CHECK(slurm.hosts[0].slots == 2);
  CHECK(slurm.hosts[0].env.at("CUDA_VISIBLE_DEVICES") == "0,1");

  o = hosts_options(HostSource::slurm);
  o.exclude = "n1@n3:3";
  const HostsFile excluded =
      ok(load_host_source(o, {{"SLURM_JOB_NODELIST", "n[1-3]"}, {"SLURM_GPUS_ON_NODE", "4"}}));
  REQUIRE(excluded.hosts.size() == 2);
  CHECK(excluded.hosts[1].env.at("CUDA_VISIBLE_DEVICES") == "0,1,2");

  o = hosts_options(HostSource::host_list);
  o.host_list = "a:4,b:4";
  o.exclude = "c";
  auto result = load_host_source(o, {});
  REQUIRE_FALSE(result.ok());
  CHECK(result.error()[0].to_string() == "--exclude: no host 'c' in -H");
}

TEST_CASE("host source: an explicit --nproc-per-node wins over Slurm's counts") {
  Options o = hosts_options(HostSource::slurm);
  o.nproc_per_node = 3;
  const HostsFile file = ok(
      load_host_source(o, {{"SLURM_JOB_NODELIST", "n[1-2]"}, {"SLURM_TASKS_PER_NODE", "1(x2)"}}));
  CHECK_FALSE(file.hosts[0].slots.has_value());
  CHECK_FALSE(file.hosts[1].slots.has_value());
}

TEST_CASE("host source: a hostfile's warnings survive the filters; errors name the source") {
  TempFile hostfile("hostfile", "a slots=2 max_slots=4\nb slots=2\n");
  Options o = hosts_options(HostSource::hostfile);
  o.hostfile = hostfile.path();
  o.exclude = "b";
  const HostsFile file = ok(load_host_source(o, {}));
  CHECK(file.hosts.size() == 1);
  REQUIRE(file.warnings.size() == 1);
  CHECK(file.warnings[0].line == 1);

  o = hosts_options(HostSource::slurm);
  auto result = load_host_source(o, {{"SLURM_JOB_ID", "7"}});
  REQUIRE_FALSE(result.ok());
  CHECK(result.error()[0].file == "SLURM_JOB_NODELIST");
}
