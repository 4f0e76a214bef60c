#include "options.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>

namespace mnist {
namespace {

constexpr const char* kUsage =
    "usage: mnist_dist [--epochs N] [--batch-size N] [--test-batch-size N] [--lr X]\n"
    "                  [--momentum X] [--seed N] [--log-interval N] [--data DIR] [--dir LOGDIR]\n"
    "                  [--backend gloo|nccl] [--no-cuda] [--save-model PATH] [--resume PATH]\n"
    "                  [--checkpoint-dir DIR] [--synthetic N] [--dump-weights PATH]\n"
    "                  [--hang-at-step N [--hang-rank R]]\n"
    "Distributed from RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT (as set by\n"
    "dlaunch or torchrun); runs alone when they are unset. --checkpoint-dir defaults to\n"
    "DLAUNCH_CHECKPOINT_DIR (dlaunch --checkpoint-dir): rank 0 saves DIR/mnist_dist.pt after\n"
    "every epoch, and a run that finds it there resumes from it.\n";

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "mnist_dist: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

template <class T>
T number(const std::string& flag, const std::string& text) {
  try {
    std::size_t used = 0;
    T value;
    if constexpr (std::is_floating_point_v<T>) {
      value = static_cast<T>(std::stod(text, &used));
    } else {
      value = static_cast<T>(std::stoll(text, &used));
    }
    if (used != text.size()) throw std::invalid_argument(text);
    return value;
  } catch (const std::exception&) {
    usage_error(flag + ": not a number: '" + text + "'");
  }
}

}  // namespace

Options parse_options(int argc, char** argv) {
  Options o;
  if (const char* dir = std::getenv("DLAUNCH_CHECKPOINT_DIR")) o.checkpoint_dir = dir;
  const std::map<std::string, std::function<void(const std::string&)>> with_value = {
      {"--epochs", [&](const std::string& v) { o.epochs = number<int>("--epochs", v); }},
      {"--batch-size",
       [&](const std::string& v) { o.batch_size = number<int>("--batch-size", v); }},
      {"--test-batch-size",
       [&](const std::string& v) { o.test_batch_size = number<int>("--test-batch-size", v); }},
      {"--lr", [&](const std::string& v) { o.lr = number<double>("--lr", v); }},
      {"--momentum", [&](const std::string& v) { o.momentum = number<double>("--momentum", v); }},
      {"--seed", [&](const std::string& v) { o.seed = number<std::uint64_t>("--seed", v); }},
      {"--log-interval",
       [&](const std::string& v) { o.log_interval = number<int>("--log-interval", v); }},
      {"--data", [&](const std::string& v) { o.data = v; }},
      {"--dir", [&](const std::string& v) { o.dir = v; }},
      {"--backend", [&](const std::string& v) { o.backend = v; }},
      {"--save-model", [&](const std::string& v) { o.save_model = v; }},
      {"--resume", [&](const std::string& v) { o.resume = v; }},
      {"--checkpoint-dir", [&](const std::string& v) { o.checkpoint_dir = v; }},
      {"--synthetic", [&](const std::string& v) { o.synthetic = number<int>("--synthetic", v); }},
      {"--dump-weights", [&](const std::string& v) { o.dump_weights = v; }},
      {"--hang-at-step",
       [&](const std::string& v) { o.hang_at_step = number<int>("--hang-at-step", v); }},
      {"--hang-rank", [&](const std::string& v) { o.hang_rank = number<int>("--hang-rank", v); }},
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (arg == "--no-cuda") {
      o.no_cuda = true;
      continue;
    }
    std::string value;
    bool has_value = false;
    if (const auto eq = arg.find('='); eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    auto it = with_value.find(arg);
    if (it == with_value.end()) usage_error("unknown flag '" + arg + "'");
    if (!has_value) {
      if (i + 1 >= argc) usage_error(arg + " needs a value");
      value = argv[++i];
    }
    it->second(value);
  }
  if (o.epochs < 1 || o.batch_size < 1 || o.test_batch_size < 1 || o.log_interval < 1) {
    usage_error("--epochs, --batch-size, --test-batch-size and --log-interval must be >= 1");
  }
  if (o.synthetic < 0) usage_error("--synthetic must be >= 0");
  if (o.hang_at_step < 0 || o.hang_rank < 0)
    usage_error("--hang-at-step and --hang-rank must be >= 0");
  if (!o.backend.empty() && o.backend != "gloo" && o.backend != "nccl") {
    usage_error("--backend must be gloo or nccl");
  }
  return o;
}

}  // namespace mnist
