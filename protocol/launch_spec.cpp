#include "protocol/launch_spec.h"

#include <unistd.h>

#include <cerrno>

#include "protocol/field_codec.h"
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

// The spec's fields, once, in wire order (protocol/field_codec.h).
template <class C, class S>
void fields(C& c, S& s) {
  c.str(s.secret, 1024);
  c.str(s.rdzv_host, 1024);
  c.u16(s.rdzv_port);
  c.i32(s.node_rank);
  c.i32(s.nproc);
  c.str(s.host_name, 1024);
  c.strings(s.argv, wire::kMaxListItems);
  c.string_map(s.env);
  c.str(s.interface, 256);
  c.str(s.workdir, 4096);
  c.flag(s.echo);
  c.i32(s.rdzv_timeout_s);
  c.i32(s.grace_s);
  c.i32(s.heartbeat_timeout_s);
  c.i32(s.nnodes);
  c.flag(s.check);
  c.i32(s.master_port);
  c.str(s.tensorboard_dir, 4096);
  c.flag(s.workdir_required);
  c.flag(s.sync);
  c.str(s.checkpoint_dir, 4096);
  c.flag(s.pass_local_rank);
  c.str(s.container.image, 4096);
  c.str(s.container.engine, 64);
  c.str(s.container.shm_size, 64);
  c.strings(s.container.mounts, wire::kMaxListItems);
  c.str(s.container.image_file, 128);
  c.str(s.git.url, 4096);
  c.str(s.git.commit, 128);
  c.str(s.git.name, 256);
  c.str(s.git.job, 1024);
}

}  // namespace

std::string encode_launch_spec(const LaunchSpec& s) {
  wire::Writer body;
  wire::Encoder e(body);
  fields(e, s);
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
  wire::Decoder d(r);
  LaunchSpec s;
  fields(d, s);
  if (d.failed() || !r.done() || (s.argv.empty() && !s.check) || s.node_rank < 0 || s.nproc < -2 ||
      s.nnodes < 0 || s.master_port < 0 || s.master_port > 65535)
    return std::nullopt;
  return s;
}

Result<LaunchSpec> read_launch_spec(int fd) {
  char header[8];
  if (!read_exact(fd, header, sizeof header))
    return fail("no launch spec on standard input (dlaunch-agent is started by dlaunch)");
  wire::Reader h(std::string_view(header, sizeof header));
  const std::uint32_t magic = h.u32();
  const std::uint32_t length = h.u32();
  if (magic != kSpecMagic) return fail("standard input does not start with a dlaunch launch spec");
  if (length > kMaxSpec) return fail("launch spec too large");
  std::string body(length, '\0');
  if (!read_exact(fd, body.data(), length)) return fail("launch spec cut short");
  auto spec = decode_launch_spec_body(body);
  if (!spec) return fail("malformed launch spec");
  return std::move(*spec);
}

}  // namespace dlaunch
