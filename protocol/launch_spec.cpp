#include "protocol/launch_spec.h"

#include <unistd.h>

#include <cerrno>

#include "protocol/wire.h"

namespace dlaunch {
namespace {

constexpr std::uint32_t kSpecMagic = 0x444C5350;  // "DLSP"
constexpr std::uint32_t kMaxSpec = 16 * 1024 * 1024;

bool read_exact(int fd, char* out, std::size_t n) {
  while (n > 0) {
    const ssize_t got = ::read(fd, out, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    out += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

}  // namespace

std::string encode_launch_spec(const LaunchSpec& s) {
  wire::Writer body;
  body.str(s.secret);
  body.str(s.rdzv_host);
  body.u16(s.rdzv_port);
  body.i32(s.node_rank);
  body.i32(s.nproc);
  body.str(s.host_name);
  body.strings(s.argv);
  body.string_map(s.env);
  body.str(s.interface);
  body.str(s.workdir);
  body.u8(s.echo ? 1 : 0);
  body.i32(s.rdzv_timeout_s);
  body.i32(s.grace_s);
  body.i32(s.heartbeat_timeout_s);
  body.i32(s.nnodes);
  body.u8(s.check ? 1 : 0);
  body.i32(s.master_port);
  body.str(s.tensorboard_dir);
  body.u8(s.workdir_required ? 1 : 0);
  body.u8(s.sync ? 1 : 0);
  body.str(s.checkpoint_dir);
  body.u8(s.pass_local_rank ? 1 : 0);
  body.str(s.container.image);
  body.str(s.container.engine);
  body.str(s.container.shm_size);
  body.strings(s.container.mounts);
  body.str(s.container.image_file);
  body.str(s.git.url);
  body.str(s.git.commit);
  body.str(s.git.name);
  wire::Writer out;
  out.u32(kSpecMagic);
  out.u32(static_cast<std::uint32_t>(body.bytes().size()));
  std::string bytes = out.take();
  bytes += body.bytes();
  return bytes;
}

std::string in_workdir(const LaunchSpec& spec, const std::string& dir) {
  if (dir.starts_with('/') || spec.workdir.empty()) return dir;
  return spec.workdir + "/" + dir;
}

std::optional<LaunchSpec> decode_launch_spec_body(std::string_view body) {
  wire::Reader r(body);
  LaunchSpec s;
  s.secret = r.str(1024);
  s.rdzv_host = r.str(1024);
  s.rdzv_port = r.u16();
  s.node_rank = r.i32();
  s.nproc = r.i32();
  s.host_name = r.str(1024);
  s.argv = r.strings();
  s.env = r.string_map();
  s.interface = r.str(256);
  s.workdir = r.str(4096);
  const auto echo = r.u8();
  s.echo = echo == 1;
  s.rdzv_timeout_s = r.i32();
  s.grace_s = r.i32();
  s.heartbeat_timeout_s = r.i32();
  s.nnodes = r.i32();
  const auto check = r.u8();
  s.check = check == 1;
  s.master_port = r.i32();
  s.tensorboard_dir = r.str(4096);
  const auto workdir_required = r.u8();
  s.workdir_required = workdir_required == 1;
  const auto sync = r.u8();
  s.sync = sync == 1;
  s.checkpoint_dir = r.str(4096);
  const auto pass_local_rank = r.u8();
  s.pass_local_rank = pass_local_rank == 1;
  s.container.image = r.str(4096);
  s.container.engine = r.str(64);
  s.container.shm_size = r.str(64);
  s.container.mounts = r.strings();
  s.container.image_file = r.str(128);
  s.git.url = r.str(4096);
  s.git.commit = r.str(128);
  s.git.name = r.str(256);
  if (!r.done() || echo > 1 || check > 1 || workdir_required > 1 || sync > 1 ||
      pass_local_rank > 1 || (s.argv.empty() && !s.check) || s.node_rank < 0 || s.nproc < -1 ||
      s.nnodes < 0 || s.master_port < 0 || s.master_port > 65535)
    return std::nullopt;
  return s;
}

std::optional<LaunchSpec> read_launch_spec(int fd, std::string* error) {
  char header[8];
  if (!read_exact(fd, header, sizeof header)) {
    *error = "no launch spec on standard input (dlaunch-agent is started by dlaunch)";
    return std::nullopt;
  }
  wire::Reader h(std::string_view(header, sizeof header));
  const std::uint32_t magic = h.u32();
  const std::uint32_t length = h.u32();
  if (magic != kSpecMagic) {
    *error = "standard input does not start with a dlaunch launch spec";
    return std::nullopt;
  }
  if (length > kMaxSpec) {
    *error = "launch spec too large";
    return std::nullopt;
  }
  std::string body(length, '\0');
  if (!read_exact(fd, body.data(), length)) {
    *error = "launch spec cut short";
    return std::nullopt;
  }
  auto spec = decode_launch_spec_body(body);
  if (!spec) *error = "malformed launch spec";
  return spec;
}

}  // namespace dlaunch
