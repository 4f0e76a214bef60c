#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "launcher/hosts/host_list.h"
#include "tests/unit/launcher/hosts/hosts_result.h"

using namespace dlaunch;
using dlaunch::testing::ok;

namespace {

std::vector<Diagnostic> errors(HostsFileResult result) {
  REQUIRE_MESSAGE(!result.ok(), "expected diagnostics");
  auto diags = result.error();
  REQUIRE_FALSE(diags.empty());
  return diags;
}

HostsFile hostfile_ok(const std::string& text) {
  return ok(parse_hostfile(text, "hostfile"));
}

// The only diagnostic of a hostfile, at `line`:`column`, containing `part`.
void check_hostfile_error(const std::string& text, int line, int column, const std::string& part) {
  auto diags = errors(parse_hostfile(text, "hostfile"));
  std::string all;
  for (const auto& d : diags) all += "\n  " + d.to_string();
  INFO("hostfile:\n", text, "\ndiagnostics:", all);
  REQUIRE(diags.size() == 1);
  CHECK(diags[0].file == "hostfile");
  CHECK(diags[0].line == line);
  CHECK(diags[0].column == column);
  CHECK_MESSAGE(diags[0].message.find(part) != std::string::npos, diags[0].message);
}

// The only diagnostic of a result, from `source`, containing `part`.
void check_error(HostsFileResult result, const std::string& source, const std::string& part) {
  auto diags = errors(std::move(result));
  REQUIRE(diags.size() == 1);
  CHECK(diags[0].file == source);
  CHECK(diags[0].line == 0);
  CHECK(diags[0].to_string().rfind(source + ": ", 0) == 0);
  CHECK_MESSAGE(diags[0].message.find(part) != std::string::npos, diags[0].message);
}

std::vector<std::string> names(const HostsFile& file) {
  std::vector<std::string> out;
  for (const auto& h : file.hosts) out.push_back(h.name);
  return out;
}

// Four hosts as a hostfile gives them: a and b with 4 GPUs, c with 2, d unknown.
HostsFile four_hosts() {
  return hostfile_ok("a slots=4\nb slots=4\nc slots=2\nd\n");
}

std::string visible(const HostEntry& host) {
  const auto it = host.env.find("CUDA_VISIBLE_DEVICES");
  return it == host.env.end() ? "<unset>" : it->second;
}

}  // namespace

TEST_CASE("hostfile: hosts, slots, comments and blank lines") {
  const HostsFile file = hostfile_ok(
      "# the job's machines\n"
      "\n"
      "worker-1 slots=4\n"
      "  worker-2\tslots=8   # a trailing comment\n"
      "worker-3 # no slots: one rank per GPU\n"
      "   \n"
      "10.0.0.4 slots=1\r\n");
  CHECK(file.path == "hostfile");
  REQUIRE(file.hosts.size() == 4);
  CHECK(names(file) == std::vector<std::string>{"worker-1", "worker-2", "worker-3", "10.0.0.4"});
  CHECK(file.hosts[0].address == "worker-1");
  CHECK(file.hosts[0].slots == 4);
  CHECK(file.hosts[1].slots == 8);
  CHECK_FALSE(file.hosts[2].slots.has_value());
  CHECK(file.hosts[3].slots == 1);
  CHECK(file.hosts[0].line == 3);
  CHECK(file.hosts[1].line == 4);
  CHECK(file.hosts[3].line == 7);
  CHECK(file.warnings.empty());
  // Everything else is as a TOML host with only an address.
  HostEntry plain = file.hosts[2];
  plain.line = 0;
  HostEntry expected;
  expected.name = expected.address = "worker-3";
  CHECK(plain == expected);
}

TEST_CASE("hostfile: max_slots is accepted, ignored, and noted once with its first line") {
  const HostsFile file =
      hostfile_ok("a slots=2 max_slots=4\nb slots=2\nc max_slots=8 slots=1\nd max_slots=2\n");
  CHECK(file.hosts[0].slots == 2);
  CHECK(file.hosts[2].slots == 1);
  REQUIRE(file.warnings.size() == 1);
  CHECK(file.warnings[0].to_string().rfind("hostfile:1: max_slots is ignored", 0) == 0);
  CHECK(file.warnings[0].message.find("also on lines 3, 4") != std::string::npos);
  CHECK(hostfile_ok("a\nb max_slots=3\n").warnings[0].line == 2);
}

TEST_CASE("hostfile: malformed lines name the line and column") {
  check_hostfile_error("a slots=4\nb slots=x\n", 2, 3, "slots must be a number from 1 to 4096");
  check_hostfile_error("a slots=0\n", 1, 3, "slots must be");
  check_hostfile_error("a slots=4097\n", 1, 3, "slots must be");
  check_hostfile_error("a slots=\n", 1, 3, "slots must be");
  check_hostfile_error("a slots=4\n\nb slot=4\n", 3, 3, "did you mean 'slots'?");
  check_hostfile_error("a cpu=4\n", 1, 3, "unknown key 'cpu'");
  check_hostfile_error("a slots 4\n", 1, 3, "is not key=value");
  check_hostfile_error("slots=4\n", 1, 1, "expected a host name first");
  check_hostfile_error("a slots=1 slots=2\n", 1, 11, "'slots' is given twice");
  check_hostfile_error("a max_slots=-1\n", 1, 3, "max_slots must be");
  check_hostfile_error("-oProxyCommand=x\n", 1, 1, "expected a host name first");
  check_hostfile_error("-x slots=1\n", 1, 1, "must not start with '-'");
  CHECK(errors(parse_hostfile("a\nb x\nc slots=0\n", "hostfile")).size() == 2);
  // Bytes that are not UTF-8 are escaped, never echoed raw; UTF-8 stays as written.
  check_hostfile_error("a slots=\xff\n", 1, 3, "not '\\xff'");
  check_hostfile_error("a slots=\xc3\xa9\xe2\x82\n", 1, 3, "not '\xc3\xa9\\xe2\\x82'");
}

TEST_CASE("hostfile: MPICH's host:N is the host with N slots; IPv6 stays whole") {
  const auto h = hostfile_ok("gpu1:2\ngpu2:8\nfe80::1 slots=3\n");
  REQUIRE(h.hosts.size() == 3);
  CHECK(h.hosts[0].name == "gpu1");
  CHECK(h.hosts[0].address == "gpu1");
  CHECK(h.hosts[0].slots == 2);
  CHECK(h.hosts[1].slots == 8);
  CHECK(h.hosts[2].address == "fe80::1");
  CHECK(h.hosts[2].slots == 3);
  check_hostfile_error("gpu1:x\n", 1, 1, "in MPICH's form host:N, N must be a number");
  check_hostfile_error("gpu1:0\n", 1, 1, "N must be");
  check_hostfile_error("gpu1:2 slots=4\n", 1, 8, "'slots' is given twice");
}

TEST_CASE("hostfile: a duplicate host names both lines") {
  check_hostfile_error("a slots=1\nb slots=1\n# c\n a slots=2\n", 4, 2,
                       "host 'a' is listed twice (first on line 1)");
}

TEST_CASE("hostfile: no hosts, and a missing file") {
  check_error(parse_hostfile("# nothing\n\n", "hostfile"), "hostfile", "no hosts");
  check_error(parse_hostfile("", "hostfile"), "hostfile", "no hosts");
  check_error(load_hostfile("/nonexistent/hostfile"), "/nonexistent/hostfile", "cannot open");
}

TEST_CASE("-H: Horovod's host:slots list") {
  const HostsFile file = ok(parse_host_arg("host1:4,host2:2,host3"));
  CHECK(file.path == "-H");
  CHECK(names(file) == std::vector<std::string>{"host1", "host2", "host3"});
  CHECK(file.hosts[0].slots == 4);
  CHECK(file.hosts[1].slots == 2);
  CHECK_FALSE(file.hosts[2].slots.has_value());
  CHECK(file.hosts[2].address == "host3");
  CHECK(file.hosts[2].line == 3);
  CHECK(ok(parse_host_arg("localhost")).hosts.size() == 1);
}

TEST_CASE("-H: errors name -H and the bad item") {
  check_error(parse_host_arg("a:4,b:x"), "-H", "bad host 'b:x': slots must be");
  check_error(parse_host_arg("a:0"), "-H", "bad host 'a:0'");
  check_error(parse_host_arg("a:"), "-H", "bad host 'a:'");
  check_error(parse_host_arg("a:4,,b"), "-H", "empty host at position 2");
  check_error(parse_host_arg("a,"), "-H", "empty host at position 2");
  check_error(parse_host_arg(""), "-H", "empty host");
  check_error(parse_host_arg(":4"), "-H", "bad host ':4': the name must not be empty");
  check_error(parse_host_arg("a:1,a:2"), "-H", "bad host 'a:2': 'a' is named twice");
  check_error(parse_host_arg("::1:4"), "-H", "more than one ':'");
  check_error(parse_host_arg("-oX=y:1"), "-H", "must not start with '-'");
}

TEST_CASE("--include/--exclude: DeepSpeed's host1:0,1@host2 syntax") {
  auto parsed = parse_host_filter("a:0,2@b@c:3", "--include");
  REQUIRE(parsed.ok());
  CHECK(*parsed == std::vector<HostFilterItem>{{"a", {0, 2}}, {"b", {}}, {"c", {3}}});
  for (const char* bad :
       {"", "a@", "@a", "a@@b", ":0", "a:", "a:x", "a:0,", "a:-1", "a:0,0", "a:4096"}) {
    INFO("filter: ", bad);
    auto result = parse_host_filter(bad, "--exclude");
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().file == "--exclude");
  }
}

TEST_CASE(
    "--include keeps the named hosts in host-list order; GPU indices set slots and "
    "CUDA_VISIBLE_DEVICES") {
  const HostsFile file = ok(filter_hosts(four_hosts(), "c@a:1,3", ""));
  REQUIRE(names(file) == std::vector<std::string>{"a", "c"});
  CHECK(file.hosts[0].slots == 2);
  CHECK(visible(file.hosts[0]) == "1,3");
  CHECK(file.hosts[1].slots == 2);
  CHECK(visible(file.hosts[1]) == "<unset>");
  // Indices as given, on a host whose GPU count is unknown.
  const HostsFile d = ok(filter_hosts(four_hosts(), "d:2,0", ""));
  CHECK(d.hosts[0].slots == 2);
  CHECK(visible(d.hosts[0]) == "2,0");
  // Other env entries stay.
  HostsFile with_env = four_hosts();
  with_env.hosts[0].env["NCCL_DEBUG"] = "INFO";
  const HostsFile kept = ok(filter_hosts(with_env, "a:0", ""));
  CHECK(kept.hosts[0].env ==
        std::map<std::string, std::string>{{"CUDA_VISIBLE_DEVICES", "0"}, {"NCCL_DEBUG", "INFO"}});
}

TEST_CASE("--exclude drops hosts, or GPUs out of the host's GPU count") {
  CHECK(names(ok(filter_hosts(four_hosts(), "", "b@d"))) == std::vector<std::string>{"a", "c"});
  const HostsFile file = ok(filter_hosts(four_hosts(), "", "a:0,2@c:0,1"));
  // c lost both its GPUs, so it is gone; a keeps GPUs 1 and 3.
  REQUIRE(names(file) == std::vector<std::string>{"a", "b", "d"});
  CHECK(file.hosts[0].slots == 2);
  CHECK(visible(file.hosts[0]) == "1,3");
  CHECK(file.hosts[1].slots == 4);
  CHECK(visible(file.hosts[1]) == "<unset>");
  // `gpus`, when known, is the count; else `slots`.
  HostsFile toml = four_hosts();
  toml.hosts[1].gpus = 8;
  toml.hosts[1].slots.reset();
  const HostsFile eight = ok(filter_hosts(toml, "", "b:7"));
  CHECK(eight.hosts[1].slots == 7);
  CHECK(visible(eight.hosts[1]) == "0,1,2,3,4,5,6");
}

TEST_CASE("--include/--exclude: errors name the flag and the host") {
  check_error(filter_hosts(four_hosts(), "a@x", ""), "--include", "no host 'x' in hostfile");
  check_error(filter_hosts(ok(parse_host_arg("worker-1:4,worker-2:4")), "", "wroker-2"),
              "--exclude", "no host 'wroker-2' in -H; did you mean 'worker-2'?");
  check_error(filter_hosts(four_hosts(), "a@b:1@a:2", ""), "--include", "'a' is named twice");
  check_error(filter_hosts(four_hosts(), "a:4", ""), "--include",
              "host 'a' has 4 GPUs (0 to 3), so no GPU 4");
  check_error(filter_hosts(four_hosts(), "", "c:2"), "--exclude", "no GPU 2");
  check_error(filter_hosts(four_hosts(), "", "d:0"), "--exclude", "no known GPU count");
  check_error(filter_hosts(four_hosts(), "", "a@b@c@d"), "--exclude", "leaves no host");
  check_error(filter_hosts(four_hosts(), "a", "b"), "--include", "cannot be combined");
  check_error(filter_hosts(four_hosts(), "a:", ""), "--include", "not a GPU index");
  HostsFile set = four_hosts();
  set.hosts[0].env["CUDA_VISIBLE_DEVICES"] = "2,3";
  check_error(filter_hosts(set, "a:0", ""), "--include", "already sets CUDA_VISIBLE_DEVICES");
  // Without indices the host's own setting is kept.
  CHECK(visible(ok(filter_hosts(set, "a", "")).hosts[0]) == "2,3");
}

TEST_CASE("no filter: the hosts as they were") {
  const HostsFile file = ok(filter_hosts(four_hosts(), "", ""));
  CHECK(names(file) == std::vector<std::string>{"a", "b", "c", "d"});
}
