#include <doctest/doctest.h>

#include "launcher/check/check_report.h"
#include "launcher/check/check_result.h"

using namespace dlaunch;

namespace {

proto::HostFacts facts(std::int64_t shm, const std::string& python, const std::string& torch) {
  proto::HostFacts f;
  f.agent_version = "0.9.0";
  f.os = "Debian GNU/Linux 12 (bookworm)";
  f.kernel = "6.1.0";
  f.cpus = 8;
  f.home_free = 20LL << 30;
  f.tmp_free = 20LL << 30;
  f.shm_size = shm;
  f.python_version = python;
  f.torch_version = torch;
  return f;
}

// Three healthy hosts, every pair reached.
CheckResult healthy() {
  CheckResult r;
  for (int i = 0; i < 3; ++i) {
    HostCheck h;
    h.name = "h" + std::to_string(i);
    h.address = "198.19.1." + std::to_string(4 * i + 2);
    h.up = true;
    h.facts = facts(8LL << 30, "3.11.2", "2.1.0");
    h.clock_skew_us = 150;
    h.clock_uncertainty_us = 200;
    h.interface = "eth" + std::to_string(i);
    h.test_address = "198.18.1." + std::to_string(10 + i);
    r.hosts.push_back(h);
  }
  r.master_chosen = true;
  r.master_addr = "198.18.1.10";
  r.master_report = "MASTER_ADDR 198.18.1.10: the first ...\n";
  r.duration_ms = 1000;
  for (int a = 0; a < 3; ++a) {
    for (int b = 0; b < 3; ++b) {
      if (a == b) continue;
      PairCheck p{a, b, true, {b, true, 420, 125'000'000, 1'000'000, ""}, ""};
      r.pairs.push_back(p);
    }
  }
  return r;
}

bool has_warning(const std::vector<CheckWarning>& ws, const std::string& host,
                 const std::string& part) {
  for (const auto& w : ws) {
    if (w.host == host && w.text.find(part) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("healthy hosts: no warning, a job can launch, exit 0") {
  const auto r = healthy();
  CHECK(check_warnings(r).empty());
  CHECK(launch_problems(r).empty());
  CHECK(check_exit_code(r) == 0);
  CHECK(throughput_bps(r.pairs[0].result) == doctest::Approx(1e9));
}

TEST_CASE("the result line counts the hosts, and names one host as one") {
  auto r = healthy();
  CHECK(format_check_text(r).find("\nresult: a job can launch on these 3 hosts\n") !=
        std::string::npos);
  r.hosts.resize(1);
  r.pairs.clear();
  CHECK(format_check_text(r).find("\nresult: a job can launch on this host\n") !=
        std::string::npos);
}

TEST_CASE("a /dev/shm under 1 GiB is warned about, naming SIGBUS") {
  auto r = healthy();
  r.hosts[2].facts->shm_size = 64LL << 20;
  const auto ws = check_warnings(r);
  CHECK(has_warning(ws, "h2", "/dev/shm is 64 MiB"));
  CHECK(has_warning(ws, "h2", "SIGBUS"));
  CHECK_FALSE(has_warning(ws, "h0", "/dev/shm"));
  CHECK(check_exit_code(r) == 0);  // a warning, not a reason to refuse
  r.hosts[2].facts->shm_size = 1LL << 30;
  CHECK(check_warnings(r).empty());
}

TEST_CASE("python or torch versions that differ are one warning naming the hosts") {
  auto r = healthy();
  r.hosts[1].facts->torch_version = "";
  r.hosts[2].facts->python_version = "3.10.12";
  const auto ws = check_warnings(r);
  CHECK(has_warning(ws, "", "torch differs between hosts: 2.1.0 on h0, h2; none on h1"));
  CHECK(has_warning(ws, "", "python3 differs between hosts: 3.10.12 on h2; 3.11.2 on h0, h1"));
}

TEST_CASE("a python3 without torch is named with its path: another python may have it") {
  auto r = healthy();
  r.hosts[1].facts->torch_version = "";
  r.hosts[1].facts->python_path = "/root/.pyenv/versions/3.11.7/bin/python3";
  const auto ws = check_warnings(r);
  CHECK(has_warning(ws, "h1",
                    "torch is not importable by /root/.pyenv/versions/3.11.7/bin/python3 (python "
                    "3.11.2), the first python3 on the PATH of a non-interactive SSH login; a "
                    "rank that runs another python (/usr/bin/python3, a virtualenv's) may still "
                    "have it"));
}

TEST_CASE("a clock off by more than a second beyond the uncertainty is warned about") {
  auto r = healthy();
  r.hosts[1].clock_skew_us = -1'500'000;
  r.hosts[1].clock_uncertainty_us = 400'000;
  CHECK(has_warning(check_warnings(r), "h1", "-1.5 s +-400.0 ms"));
  r.hosts[1].clock_uncertainty_us = 600'000;
  CHECK(check_warnings(r).empty());
}

TEST_CASE("a host down, no MASTER_ADDR or a blocked pair: exit 1 with the reasons") {
  auto r = healthy();
  r.pairs[2].result = {0, false, 0, 0, 0, "timed out"};  // h1 -> h0
  auto problems = launch_problems(r);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0] == "h1 -> h0 (198.18.1.10): timed out");
  CHECK(check_exit_code(r) == 1);

  r = healthy();
  r.master_chosen = false;
  CHECK(check_exit_code(r) == 1);

  r = healthy();
  r.hosts[2].up = false;
  r.hosts[2].error = "h2: cannot connect to 198.19.1.10:22: timed out";
  for (auto& p : r.pairs) {
    if (p.from == 2 || p.to == 2) p = {p.from, p.to, false, {}, "h2 is down"};
  }
  problems = launch_problems(r);
  REQUIRE(problems.size() == 1);  // the pairs are not listed again
  CHECK(problems[0].find("h2 is not up: h2: cannot connect") == 0);
}

TEST_CASE("text report: a row per host, the warning, the master report, the matrix") {
  auto r = healthy();
  r.hosts[2].facts->shm_size = 64LL << 20;
  r.pairs[2].result = {0, false, 0, 0, 0, "timed out"};
  const auto text = format_check_text(r);
  CHECK(text.find("hosts: 3 of 3 up") != std::string::npos);
  CHECK(text.find("64 MiB (!)") != std::string::npos);
  CHECK(text.find("h2: /dev/shm is 64 MiB") != std::string::npos);
  CHECK(text.find("MASTER_ADDR 198.18.1.10") != std::string::npos);
  CHECK(text.find("ok 0.4 ms 1.00 Gb/s") != std::string::npos);
  CHECK(text.find("BLOCKED (timed out)") != std::string::npos);
  CHECK(text.find("a job could not launch") != std::string::npos);
  CHECK(text.find("h1 -> h0 (198.18.1.10): timed out") != std::string::npos);
}

TEST_CASE("json report: the same content, machine-readable") {
  auto r = healthy();
  r.hosts[2].facts->shm_size = 64LL << 20;
  const auto json = format_check_json(r);
  CHECK(json.starts_with("{\"ok\":true,\"hosts\":[{\"name\":\"h0\""));
  CHECK(json.find("\"shm_bytes\":67108864") != std::string::npos);
  CHECK(json.find("\"warnings\":[\"/dev/shm is 64 MiB") != std::string::npos);
  CHECK(json.find("\"master\":{\"chosen\":true,\"address\":\"198.18.1.10\"") != std::string::npos);
  CHECK(json.find("{\"from\":\"h1\",\"to\":\"h0\",\"address\":\"198.18.1.10\",\"tested\":true,"
                  "\"reached\":true,\"rtt_us\":420,\"bytes\":125000000,\"bits_per_second\":"
                  "1000000000,\"error\":null}") != std::string::npos);
  CHECK(json.find("\"problems\":[]") != std::string::npos);
}

TEST_CASE(
    "text report of a sampled matrix: the strides, the counts, every pair not ok, the "
    "slowest; json says sampled") {
  auto r = healthy();
  r.sampled_strides = {1};
  r.pairs[2].result = {0, false, 0, 0, 0, "timed out"};  // h1 -> h0
  r.pairs[4].result.bytes = 1'000'000;                   // h2 -> h0: 8 Mb/s, the slowest
  const auto text = format_check_text(r);
  CHECK(text.find("matrix: TCP between each host and the hosts 1 place after it") !=
        std::string::npos);
  CHECK(text.find("6 of the 6 ordered pairs (--matrix-pairs all tests every one)") !=
        std::string::npos);
  CHECK(text.find("5 ok, 1 not") != std::string::npos);
  CHECK(text.find("h1    h0 198.18.1.10  BLOCKED (timed out)") != std::string::npos);
  // The slowest first: h2 -> h0 at 8 Mb/s.
  const auto slowest = text.find("the slowest:");
  REQUIRE(slowest != std::string::npos);
  CHECK(text.find("h2    h0 198.18.1.10  ok 0.4 ms 8 Mb/s", slowest) != std::string::npos);
  // No table of every pair.
  CHECK(text.find("from \\ to") == std::string::npos);
  const auto json = format_check_json(r);
  CHECK(json.find("\"matrix_pairs\":\"sampled\",\"matrix_strides\":[1]") != std::string::npos);
  CHECK(format_check_json(healthy()).find("\"matrix_pairs\":\"all\"") != std::string::npos);
}

TEST_CASE("sizes, rates and clock skews as the table shows them") {
  CHECK(bytes_text(64LL << 20) == "64 MiB");
  CHECK(bytes_text(3LL << 29) == "1.5 GiB");
  CHECK(bytes_text(-1) == "?");
  CHECK(rate_text(9.41e9) == "9.41 Gb/s");
  CHECK(rate_text(8.5e8) == "850 Mb/s");
  CHECK(skew_text(1200, 300) == "+1.2 ms +-300 us");
  CHECK(skew_text(-1'500'000, 2100) == "-1.5 s +-2.1 ms");
  CHECK(skew_text(0, 40) == "+0 us +-40 us");
}

TEST_CASE("an image or checkout that differs, or is missing, is a warning naming the hosts") {
  auto r = healthy();
  CHECK(check_warnings(r).empty());  // not asked: nothing to say
  for (auto& h : r.hosts) {
    h.facts->image_id = "sha256:aaaa";
    h.facts->git_commit = std::string(40, 'c');
  }
  CHECK(check_warnings(r).empty());
  r.hosts[1].facts->image_id = "sha256:bbbb";
  r.hosts[2].facts->image_id = "absent";
  r.hosts[2].facts->git_commit = "none";
  const auto ws = check_warnings(r);
  CHECK(has_warning(ws, "",
                    "the image differs between hosts: absent on h2; sha256:aaaa on h0; "
                    "sha256:bbbb on h1 (ranks of one job would run different software)"));
  CHECK(has_warning(ws, "h2", "the image is not there: a job pulls it first"));
  CHECK(has_warning(ws, "h2", "no checkout of the --sync-git repository yet"));
  CHECK(has_warning(ws, "", "the --sync-git checkout differs between hosts"));
  CHECK(check_exit_code(r) == 0);
}
