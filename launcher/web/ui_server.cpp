#include "launcher/web/ui_server.h"

#include <httplib.h>
#include <cerrno>
#include <cstring>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "common/console.h"
#include "common/json.h"
#include "launcher/cli/job_view.h"
#include "launcher/cli/top_gather.h"
#include "launcher/cli/top_view.h"
#include "launcher/web/job_metrics.h"
#include "launcher/web/jobs_json_cache.h"
#include "launcher/web/tensorboard_scalars.h"
#include "launcher/web/web_assets.h"

namespace dlaunch {
namespace {

constexpr long long kMaxLogChunk = 1 << 20;
constexpr std::size_t kMaxScalarPoints = 20000;

// What every answer carries: nothing cached, nothing framed or sniffed, and
// scripts only from dlaunch itself.
void secure(httplib::Response& res) {
  if (res.has_header("X-Content-Type-Options")) return;  // set before routing
  res.set_header("Cache-Control", "no-store");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("Content-Security-Policy",
                 "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'");
}

void send_json(httplib::Response& res, const std::string& body) {
  res.set_content(body, "application/json; charset=utf-8");
}

void not_found(httplib::Response& res, const std::string& what) {
  res.status = 404;
  res.set_content(what + "\n", "text/plain; charset=utf-8");
}

// The whole file's size and up to `limit` bytes of it from `offset`
// (negative: from that many bytes before the end).
struct LogChunk {
  std::string bytes;
  long long next = 0;
};

std::optional<LogChunk> read_log_chunk(const std::string& path, long long offset) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return std::nullopt;
  const long long size = in.tellg();
  long long from = offset < 0 ? std::max(0LL, size + offset) : std::min(offset, size);
  LogChunk chunk;
  const long long count = std::min(size - from, kMaxLogChunk);
  chunk.bytes.resize(static_cast<std::size_t>(count));
  in.seekg(from);
  in.read(chunk.bytes.data(), count);
  chunk.bytes.resize(static_cast<std::size_t>(in.gcount()));
  chunk.next = from + static_cast<long long>(chunk.bytes.size());
  return chunk;
}

std::optional<long long> number_param(const httplib::Request& req, const char* name) {
  if (!req.has_param(name)) return std::nullopt;
  const std::string text = req.get_param_value(name);
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0') return std::nullopt;
  return value;
}

}  // namespace

struct UiServer::Impl {
  UiServerOptions options;
  httplib::Server server;
  std::mutex log_mutex;
  JobsJsonCache jobs_json;

  std::string state_dir_json() const {
    JsonWriter json;
    json.value(options.log_dir);
    return json.text();
  }

  // The job the route's first group names; else nothing, answered 404.
  std::optional<Job> job_named(const httplib::Request& req, httplib::Response& res) const {
    auto job = find_job(options.log_dir, req.matches[1]);
    if (!job) not_found(res, "no job " + std::string(req.matches[1]));
    return job;
  }

  bool authorized(const httplib::Request& req, httplib::Response& res) {
    const auto query_token = req.has_param("token") ? req.get_param_value("token") : "";
    const auto access =
        request_access(options.token, req.get_header_value("Authorization"),
                       req.get_header_value("Cookie"), query_token, req.get_header_value("Host"));
    secure(res);  // a request answered here never reaches the post-routing handler
    if (access == Access::wrong_host) {
      res.status = 403;
      res.set_content("dlaunch ui answers only requests for a loopback host name\n",
                      "text/plain; charset=utf-8");
      return false;
    }
    if (access == Access::no_token) {
      res.status = 401;
      res.set_header("WWW-Authenticate", "Bearer realm=\"dlaunch ui\"");
      res.set_content(
          "dlaunch ui needs its token: open the URL with ?token=TOKEN once, or send "
          "'Authorization: Bearer TOKEN'\n",
          "text/plain; charset=utf-8");
      return false;
    }
    if (!query_token.empty() && req.method == "GET" && !req.path.starts_with("/api/") &&
        req.path != "/metrics") {
      // A browser opened ?token=: keep it in a cookie, and the URL without it.
      res.set_header("Set-Cookie", std::string(kTokenCookie) + "=" + options.token +
                                       "; Path=/; HttpOnly; SameSite=Strict");
      res.set_redirect(req.path, 303);
      return false;
    }
    return true;
  }

  void routes() {
    server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      return authorized(req, res) ? httplib::Server::HandlerResponse::Unhandled
                                  : httplib::Server::HandlerResponse::Handled;
    });
    server.set_post_routing_handler(
        [](const httplib::Request&, httplib::Response& res) { secure(res); });
    if (options.verbose) {
      server.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
        // The pool's threads take turns: the console is not shared otherwise.
        const std::lock_guard lock(log_mutex);
        console().note("ui: " + req.method + " " + req.path + " " + std::to_string(res.status));
      });
    }
    const auto shell = [](const httplib::Request&, httplib::Response& res) {
      const auto& page = page_shell();
      res.set_content(std::string(page.body), std::string(page.content_type));
    };
    server.Get("/", shell);
    server.Get("/top", shell);
    server.Get(R"(/job/[^/]+)", shell);
    server.Get(R"(/static/[a-z]+\.[a-z]+)",
               [](const httplib::Request& req, httplib::Response& res) {
                 const auto* asset = find_static_asset(req.path);
                 if (!asset) return not_found(res, "no such file: " + req.path);
                 res.set_content(std::string(asset->body), std::string(asset->content_type));
               });
    server.Get("/api/jobs", [this](const httplib::Request&, httplib::Response& res) {
      const long long now = std::time(nullptr);
      send_json(res, "{\"state_dir\":" + state_dir_json() + ",\"now\":" + std::to_string(now) +
                         ",\"jobs\":" + jobs_json.jobs_array(options.log_dir, now) + "}");
    });
    server.Get(R"(/api/jobs/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      const auto job = job_named(req, res);
      if (!job) return;
      const long long now = std::time(nullptr);
      JsonWriter json;
      write_job_json(json, *job, now);
      send_json(res, "{\"state_dir\":" + state_dir_json() + ",\"now\":" + std::to_string(now) +
                         ",\"job\":" + json.text() + "}");
    });
    server.Get(R"(/api/jobs/([^/]+)/log)",
               [this](const httplib::Request& req, httplib::Response& res) { log(req, res); });
    server.Get(R"(/api/jobs/([^/]+)/scalars)",
               [this](const httplib::Request& req, httplib::Response& res) {
                 const auto job = job_named(req, res);
                 if (!job) return;
                 std::map<std::string, std::vector<const ScalarPoint*>> tags;
                 const auto points = read_event_scalars(tensorboard_logdir(*job), kMaxScalarPoints);
                 for (const auto& p : points) tags[p.tag].push_back(&p);
                 JsonWriter json;
                 json.begin_object().key("tags").begin_object();
                 for (const auto& [tag, series] : tags) {
                   json.key(tag).begin_array();
                   for (const auto* p : series)
                     json.begin_array().value(p->step).value(p->value).end_array();
                   json.end_array();
                 }
                 json.end_object().end_object();
                 send_json(res, json.text());
               });
    server.Get(R"(/api/jobs/([^/]+)/stacks)", [this](const httplib::Request& req,
                                                     httplib::Response& res) {
      const auto job = job_named(req, res);
      if (!job) return;
      const auto stacks = last_stacks(job->dir);
      // Only a gathering of this job's own: last.txt names a directory.
      const std::string own = job->dir + "/stacks/";
      if (!stacks || !stacks->dir.starts_with(own) || stacks->dir.find("/..") != std::string::npos)
        return not_found(res, "job " + job->info.name + " has no stacks gathered");
      std::ifstream in(stacks->dir + "/summary.txt", std::ios::binary);
      if (!in) return not_found(res, "cannot read " + stacks->dir + "/summary.txt");
      std::ostringstream text;
      text << in.rdbuf();
      res.set_content(text.str(), "text/plain; charset=utf-8");
    });
    server.Get("/api/top", [this](const httplib::Request&, httplib::Response& res) {
      const auto top = gather_top_jobs(options.log_dir, options.top_interval_s);
      send_json(
          res, "{\"state_dir\":" + state_dir_json() + ",\"top\":" + format_top_job_json(top) + "}");
    });
    server.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(
          format_job_metrics(load_jobs(options.log_dir), std::time(nullptr), last_rank_output),
          "text/plain; version=0.0.4; charset=utf-8");
    });
  }

  void log(const httplib::Request& req, httplib::Response& res) {
    const auto job = job_named(req, res);
    if (!job) return;
    const auto rank = number_param(req, "rank");
    if (!rank) return not_found(res, "log: give ?rank=R");
    const auto rounds = rank_log_rounds(job->dir);
    const auto files = rounds.find(static_cast<int>(*rank));
    if (files == rounds.end() || files->second.empty())
      return not_found(res,
                       "job " + job->info.name + " has no log of rank " + std::to_string(*rank));
    const auto round = number_param(req, "round");
    const auto file =
        round ? files->second.find(static_cast<int>(*round)) : std::prev(files->second.end());
    if (file == files->second.end())
      return not_found(
          res, "rank " + std::to_string(*rank) + " has no log of round " + std::to_string(*round));
    const auto chunk = read_log_chunk(file->second, number_param(req, "offset").value_or(0));
    if (!chunk) return not_found(res, "cannot read " + file->second);
    res.set_header("X-Dlaunch-Next-Offset", std::to_string(chunk->next));
    res.set_content(chunk->bytes, "text/plain; charset=utf-8");
  }
};

UiServer::UiServer(UiServerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->routes();
}

UiServer::~UiServer() = default;

Result<int> UiServer::bind() {
  auto& s = impl_->server;
  const auto& a = impl_->options.listen;
  if (a.port == 0) {
    const int port = s.bind_to_any_port(a.host);
    if (port <= 0) return fail("cannot listen on " + a.host + ": " + std::strerror(errno));
    return port;
  }
  if (!s.bind_to_port(a.host, a.port))
    return fail("cannot listen on " + a.host + ":" + std::to_string(a.port) + ": " +
                std::strerror(errno));
  return a.port;
}

void UiServer::run() {
  // Every record read once now, so that the first look is as quick as the rest.
  (void)impl_->jobs_json.jobs_array(impl_->options.log_dir, std::time(nullptr));
  impl_->server.listen_after_bind();
}

void UiServer::stop() {
  impl_->server.stop();
}

}  // namespace dlaunch
