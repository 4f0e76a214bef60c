#include "launcher/hosts/hosts_file.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>
#include <tuple>

// Debian's libtomlplusplus is built with exceptions (its symbols live in
// toml::ex), so toml::parse throws toml::parse_error on a syntax error.
#include <toml++/toml.h>

#include "common/address.h"
#include "common/did_you_mean.h"
#include "common/text.h"
#include "protocol/rank_env.h"
#include "ssh/jump_spec.h"

namespace dlaunch {
namespace {

constexpr std::string_view kTopLevelKeys[] = {"defaults", "host", "rendezvous"};
constexpr std::string_view kRendezvousKeys[] = {"address", "port", "master_address", "via"};
constexpr std::string_view kRendezvousVia[] = {"direct", "ssh"};
constexpr std::string_view kTransports[] = {"local", "ssh"};

constexpr int kMaxGpus = 4096;
// Linux's IFNAMSIZ is 16 including the terminating NUL.
constexpr std::size_t kMaxInterfaceName = 15;
// A hosts file listing thousands of hosts is well below this; the limit keeps
// `--hosts /dev/zero` from reading forever.
constexpr std::size_t kMaxFileSize = 16u << 20;

// Collects every problem of one file; nothing stops at the first.
struct Diagnostics {
  std::string path;
  std::vector<Diagnostic> list;

  void add(const toml::source_region& where, std::string message) {
    list.push_back({path, static_cast<int>(where.begin.line), static_cast<int>(where.begin.column),
                    std::move(message)});
  }
};

}  // namespace

struct HostFieldInput {
  const toml::node& node;
  std::string_view key;
  Diagnostics& diags;
};

namespace {

std::string_view type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a floating-point number";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

std::string wrong_type(std::string_view key, std::string_view expected, const toml::node& node) {
  return "'" + std::string(key) + "' must be " + std::string(expected) + ", not " +
         std::string(type_name(node));
}

void report_unknown_key(const toml::key& key, std::string_view where,
                        std::span<const std::string_view> known, Diagnostics& diags) {
  std::string message = "unknown key " + echo_quoted(key.str()) + " in " + std::string(where);
  if (auto suggestion = did_you_mean(key.str(), known)) {
    message += "; did you mean '" + *suggestion + "'?";
  }
  diags.add(key.source(), std::move(message));
}

std::optional<std::string> read_string(const toml::node& node, std::string_view key,
                                       Diagnostics& diags) {
  const auto* value = node.as_string();
  if (value == nullptr) {
    diags.add(node.source(), wrong_type(key, "a string", node));
    return std::nullopt;
  }
  return value->get();
}

std::optional<bool> read_bool(const toml::node& node, std::string_view key, Diagnostics& diags) {
  const auto* value = node.as_boolean();
  if (value == nullptr) {
    diags.add(node.source(), wrong_type(key, "true or false", node));
    return std::nullopt;
  }
  return value->get();
}

std::optional<int> read_int(const toml::node& node, std::string_view key, int low, int high,
                            Diagnostics& diags) {
  // Strict: a quoted "8" or a float 8.0 is a mistake worth pointing at.
  const auto* value = node.as_integer();
  if (value == nullptr) {
    diags.add(node.source(), wrong_type(key, "an integer", node));
    return std::nullopt;
  }
  const std::int64_t number = value->get();
  if (number < low || number > high) {
    diags.add(node.source(), "'" + std::string(key) + "' must be between " + std::to_string(low) +
                                 " and " + std::to_string(high) + ", not " +
                                 std::to_string(number));
    return std::nullopt;
  }
  return static_cast<int>(number);
}

std::optional<std::string> read_word(const toml::node& node, std::string_view key,
                                     Diagnostics& diags) {
  auto text = read_string(node, key, diags);
  if (!text) return std::nullopt;
  if (auto reason = unsafe_word_reason(*text); !reason.empty()) {
    diags.add(node.source(), "'" + std::string(key) + "' " + echo_quoted(*text) + " " + reason);
    return std::nullopt;
  }
  return text;
}

bool valid_interface_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxInterfaceName) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == ':' || c == '-';
  });
}

template <int low, int high>
std::optional<int> read_int_in(const toml::node& node, std::string_view key, Diagnostics& diags) {
  return read_int(node, key, low, high, diags);
}

std::optional<std::string> read_interface(const toml::node& node, std::string_view key,
                                          Diagnostics& diags) {
  auto text = read_string(node, key, diags);
  if (!text) return std::nullopt;
  if (!valid_interface_name(*text)) {
    diags.add(node.source(),
              "'" + std::string(key) + "' " + echo_quoted(*text) +
                  " is not a network interface name (1 to 15 of A-Z a-z 0-9 _ . : -)");
    return std::nullopt;
  }
  return text;
}

std::optional<TransportKind> read_transport(const toml::node& node, std::string_view key,
                                            Diagnostics& diags) {
  auto text = read_string(node, key, diags);
  if (!text) return std::nullopt;
  if (*text == "local") return TransportKind::local;
  if (*text == "ssh") return TransportKind::ssh;
  std::string message = "unknown transport " + echo_quoted(*text) + ": use \"local\" or \"ssh\"";
  if (auto suggestion = did_you_mean(*text, kTransports)) {
    message += "; did you mean '" + *suggestion + "'?";
  }
  diags.add(node.source(), std::move(message));
  return std::nullopt;
}

std::optional<std::string> read_jump(const toml::node& node, std::string_view key,
                                     Diagnostics& diags) {
  auto text = read_string(node, key, diags);
  if (!text) return std::nullopt;
  if (const JumpChain chain = parse_jump_chain(*text); !chain.error.empty()) {
    diags.add(node.source(),
              "'" + std::string(key) + "' " + echo_quoted(*text) + " " + chain.error);
    return std::nullopt;
  }
  return text;
}

// Integers and booleans are stringified so that `NCCL_IB_DISABLE = 1` and
// `FOO = true` work as they would in a shell.
std::optional<std::string> env_value(const toml::node& node) {
  if (const auto* s = node.as_string()) return s->get();
  if (const auto* i = node.as_integer()) return std::to_string(i->get());
  if (const auto* b = node.as_boolean()) return b->get() ? "true" : "false";
  return std::nullopt;
}

// Adds to (and overrides) what [defaults] set, one variable at a time.
void merge_env(const HostFieldInput& input, HostEntry& entry) {
  const auto& [node, field, diags] = input;
  const auto* table = node.as_table();
  if (table == nullptr) {
    diags.add(node.source(), wrong_type(field, "a table like { NAME = \"value\" }", node));
    return;
  }
  for (auto&& [key, value] : *table) {
    bool ok = true;
    if (!valid_env_name(key.str())) {
      diags.add(key.source(), "environment variable name " + echo_quoted(key.str()) +
                                  " is not valid (letters, digits and '_', not starting with a "
                                  "digit)");
      ok = false;
    } else if (is_launcher_variable(key.str())) {
      diags.add(key.source(), "environment variable " + echo_quoted(key.str()) +
                                  " is set by dlaunch for every rank and cannot be set here");
      ok = false;
    }
    auto text = env_value(value);
    if (!text) {
      diags.add(value.source(), "environment variable " + echo_quoted(key.str()) +
                                    " must be a string, integer or boolean, not " +
                                    std::string(type_name(value)));
      ok = false;
    } else if (text->find('\0') != std::string::npos) {
      // execve would silently cut the value at the NUL.
      diags.add(value.source(), "environment variable " + echo_quoted(key.str()) +
                                    " must not contain NUL characters");
      ok = false;
    }
    if (ok) entry.env[std::string(key.str())] = std::move(*text);
  }
}

// A host key whose value `read_value` checks (type and range) goes to `member`.
template <auto read_value, auto member>
void read_into(const HostFieldInput& input, HostEntry& entry) {
  if (auto value = read_value(input.node, input.key, input.diags))
    entry.*member = std::move(*value);
}

void name_from_address(HostEntry& entry) {
  entry.name = entry.address;
}

using enum HostField::Scope;
using E = HostEntry;

// Every per-host key: name, scope, example, read (type, range -> member) and,
// where HostEntry's initial value will not do, the default when unset. The
// order is the order of suggestions (ties go to the earlier row).
constexpr HostField kHostFields[] = {
    {"name", host_only, R"("gpu1")", read_into<read_word, &E::name>, name_from_address},
    {"address", host_only, R"("10.0.1.2")", read_into<read_word, &E::address>},
    {"port", host_and_defaults, "2222", read_into<read_int_in<1, 65535>, &E::port>},
    {"user", host_and_defaults, R"("train")", read_into<read_word, &E::user>},
    {"identity", host_and_defaults, R"("~/.ssh/id_ed25519")", read_into<read_string, &E::identity>},
    {"jump", host_and_defaults, R"("admin@bastion.example.com:2222")",
     read_into<read_jump, &E::jump>},
    {"slots", host_and_defaults, "8", read_into<read_int_in<1, kMaxSlots>, &E::slots>},
    {"gpus", host_and_defaults, "8", read_into<read_int_in<0, kMaxGpus>, &E::gpus>},
    {"interface", host_and_defaults, R"("eth0")", read_into<read_interface, &E::interface>},
    {"python", host_and_defaults, R"("/opt/venv/bin/python")", read_into<read_word, &E::python>},
    {"image", host_and_defaults, R"("localhost/train:2.4")", read_into<read_word, &E::image>},
    {"env", host_and_defaults, R"({ NCCL_DEBUG = "INFO" })", merge_env},
    {"transport", host_and_defaults, R"("ssh")", read_into<read_transport, &E::transport>},
    {"spare", host_only, "true", read_into<read_bool, &E::spare>},
};

// The names of the rows in `scope` (or all rows), for suggestions.
template <std::size_t count>
constexpr std::array<std::string_view, count> field_names(std::optional<HostField::Scope> scope) {
  std::array<std::string_view, count> names{};
  std::size_t i = 0;
  for (const HostField& field : kHostFields) {
    if (!scope || field.scope == *scope) names[i++] = field.name;
  }
  return names;
}
constexpr auto kHostKeys = field_names<std::size(kHostFields)>(std::nullopt);
constexpr auto kDefaultsKeys = field_names<static_cast<std::size_t>(
    std::ranges::count(kHostFields, host_and_defaults, &HostField::scope))>(host_and_defaults);

const HostField* find_host_field(std::string_view name) {
  const auto* found = std::ranges::find(kHostFields, name, &HostField::name);
  return found == std::end(kHostFields) ? nullptr : found;
}

enum class Section { defaults, host };

// Reads the keys of a [[host]] or [defaults] table over `entry`, which holds
// what [defaults] set (or HostEntry's initial values).
void read_host_table(const toml::table& table, Section section, HostEntry& entry,
                     Diagnostics& diags) {
  for (auto&& [key, value] : table) {
    const HostField* field = find_host_field(key.str());
    if (field == nullptr) {
      if (section == Section::defaults) {
        report_unknown_key(key, "[defaults]", kDefaultsKeys, diags);
      } else {
        report_unknown_key(key, "[[host]]", kHostKeys, diags);
      }
    } else if (section == Section::defaults && field->scope == host_only) {
      diags.add(key.source(), "'" + std::string(field->name) +
                                  "' cannot be set in [defaults]: each [[host]] sets its own");
    } else {
      field->read({value, field->name, diags}, entry);
    }
  }
}

// What [defaults] sets, and its table to tell which keys it set.
struct Defaults {
  HostEntry entry;
  const toml::table* table = nullptr;
};

Defaults read_defaults(const toml::table& root, Diagnostics& diags) {
  Defaults defaults;
  const auto* node = root.get("defaults");
  if (node == nullptr) return defaults;
  defaults.table = node->as_table();
  if (defaults.table == nullptr) {
    diags.add(node->source(), wrong_type("defaults", "a table ([defaults])", *node));
    return defaults;
  }
  read_host_table(*defaults.table, Section::defaults, defaults.entry, diags);
  return defaults;
}

void fill_unset_keys(const toml::table& host, const Defaults& defaults, HostEntry& entry) {
  for (const HostField& field : kHostFields) {
    if (field.default_when_unset == nullptr || host.contains(field.name)) continue;
    if (defaults.table != nullptr && field.scope == host_and_defaults &&
        defaults.table->contains(field.name)) {
      continue;
    }
    field.default_when_unset(entry);
  }
}

// One [[host]] table as read, with the table for positions.
struct ReadHost {
  HostEntry entry;
  const toml::table* table;
};

// Each [[host]] table as read, in file order; hosts whose own keys were
// broken still come back so that later checks (duplicates) see them.
std::vector<ReadHost> read_hosts(const toml::table& root, const Defaults& defaults,
                                 Diagnostics& diags) {
  std::vector<ReadHost> hosts;
  const auto* node = root.get("host");
  if (node == nullptr) {
    diags.add(root.source(), "no hosts: add a [[host]] table with an 'address' for each machine");
    return hosts;
  }
  const auto* array = node->as_array();
  if (array == nullptr) {
    diags.add(node->source(), "'host' must be an array of tables: write [[host]], not [host]");
    return hosts;
  }
  if (array->empty()) {
    diags.add(node->source(), "no hosts: 'host' is empty; add a [[host]] table for each machine");
  }
  for (const auto& element : *array) {
    const auto* table = element.as_table();
    if (table == nullptr) {
      diags.add(element.source(),
                "each 'host' entry must be a table, not " + std::string(type_name(element)));
      continue;
    }
    HostEntry entry = defaults.entry;
    read_host_table(*table, Section::host, entry, diags);
    fill_unset_keys(*table, defaults, entry);
    entry.line = static_cast<int>(table->source().begin.line);
    if (!table->contains("address")) {
      diags.add(table->source(),
                "[[host]] has no 'address' (a host name, IP or ~/.ssh/config alias)");
    }
    hosts.push_back({std::move(entry), table});
  }
  return hosts;
}

// Where a host's name came from (the name, else the address), so that a
// duplicate can point at both.
toml::source_region name_source(const toml::table& host) {
  const auto* node = host.get("name");
  if (node == nullptr) node = host.get("address");
  return node == nullptr ? toml::source_region{} : node->source();
}

void check_unique_names(const std::vector<ReadHost>& hosts, Diagnostics& diags) {
  std::map<std::string, toml::source_region> seen;
  for (const auto& [entry, table] : hosts) {
    // Names are never empty when valid: empty means missing or invalid,
    // already reported.
    if (entry.name.empty()) continue;
    auto [it, inserted] = seen.emplace(entry.name, name_source(*table));
    if (!inserted) {
      diags.add(name_source(*table), "duplicate host name " + echo_quoted(entry.name) +
                                         " (first used on line " +
                                         std::to_string(it->second.begin.line) +
                                         "); give each [[host]] a unique 'name'");
    }
  }
}

RendezvousSettings read_rendezvous(const toml::table& root, Diagnostics& diags) {
  RendezvousSettings settings;
  const auto* node = root.get("rendezvous");
  if (node == nullptr) return settings;
  const auto* table = node->as_table();
  if (table == nullptr) {
    diags.add(node->source(), wrong_type("rendezvous", "a table ([rendezvous])", *node));
    return settings;
  }
  for (auto&& [key, value] : *table) {
    if (key.str() == "address") {
      settings.address = read_word(value, "address", diags).value_or("");
    } else if (key.str() == "port") {
      settings.port = read_int(value, "port", 1, 65535, diags);
    } else if (key.str() == "master_address") {
      settings.master_address = read_word(value, "master_address", diags).value_or("");
      settings.master_address_line = value.source().begin.line;
    } else if (key.str() == "via") {
      const auto via = read_string(value, "via", diags);
      if (via && std::ranges::find(kRendezvousVia, *via) == std::end(kRendezvousVia)) {
        diags.add(value.source(), "unknown rendezvous 'via' " + echo_quoted(*via) +
                                      ": use \"direct\" (agents connect to the coordinator) or "
                                      "\"ssh\" (through each host's SSH connection)");
      }
      settings.via_ssh = via == "ssh";
    } else {
      report_unknown_key(key, "[rendezvous]", kRendezvousKeys, diags);
    }
  }
  return settings;
}

void check_top_level_keys(const toml::table& root, Diagnostics& diags) {
  for (auto&& [key, value] : root) {
    const std::string_view name = key.str();
    if (std::find(std::begin(kTopLevelKeys), std::end(kTopLevelKeys), name) !=
        std::end(kTopLevelKeys)) {
      continue;
    }
    // A host key at the top level is a common slip: say where it belongs.
    if (find_host_field(name) != nullptr) {
      diags.add(key.source(), "unknown top-level key " + echo_quoted(name) +
                                  "; host settings go in [defaults] or a [[host]] table");
      continue;
    }
    report_unknown_key(key, "the top level", kTopLevelKeys, diags);
  }
}

std::optional<toml::table> parse_toml(const std::string& text, Diagnostics& diags) {
  try {
    return toml::parse(text, std::string_view(diags.path));
  } catch (const toml::parse_error& error) {
    diags.add(error.source(), std::string(error.description()));
    return std::nullopt;
  }
}

// The length of the well-formed UTF-8 sequence `text` starts with, or 0.
std::size_t utf8_sequence_length(std::string_view text) {
  const auto byte = [&text](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  std::size_t length = 0;
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) length = 2;
  if (lead >= 0xe0 && lead <= 0xef) length = 3;
  if (lead >= 0xf0 && lead <= 0xf4) length = 4;
  if (length == 0 || text.size() < length) return 0;
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return 0;
  }
  // Overlong forms and surrogates, as RFC 3629 excludes them.
  if (lead == 0xe0 && byte(1) < 0xa0) return 0;
  if (lead == 0xed && byte(1) > 0x9f) return 0;
  if (lead == 0xf0 && byte(1) < 0x90) return 0;
  if (lead == 0xf4 && byte(1) > 0x8f) return 0;
  return length;
}

}  // namespace

std::string echo_quoted(std::string_view text) {
  constexpr std::size_t kMaxShown = 64;
  std::string out = "'";
  auto escape = [&out](unsigned char c) {
    char escaped[8];
    std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
    out += escaped;
  };
  for (std::size_t i = 0; i < text.size() && i < kMaxShown;) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      escape(c);
      ++i;
      continue;
    }
    // Bytes that are not UTF-8 (a stray 0xff) would reach the terminal raw.
    const std::size_t length = utf8_sequence_length(text.substr(i));
    if (length == 0) {
      escape(c);
      ++i;
      continue;
    }
    out += text.substr(i, length);
    i += length;
  }
  if (text.size() > kMaxShown) out += "...";
  return out + "'";
}

std::string unsafe_word_reason(std::string_view text) {
  if (text.empty()) return "must not be empty";
  if (text.front() == '-') return "must not start with '-'";
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto u = static_cast<unsigned char>(text[i]);
    if (u < 0x20 || u == 0x7f) return "must not contain control characters";
    if (text[i] == ' ') return "must not contain whitespace";
    // C1 controls (U+0080-U+009F) in UTF-8.
    if (u == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) < 0xa0)
      return "must not contain control characters";
    // Direction marks and overrides (U+200E-U+200F, U+202A-U+202E, U+2066-U+2069)
    // would make the name print as something else on a terminal.
    if (u == 0xe2 && i + 2 < text.size()) {
      const auto b1 = static_cast<unsigned char>(text[i + 1]);
      const auto b2 = static_cast<unsigned char>(text[i + 2]);
      if ((b1 == 0x80 && (b2 == 0x8e || b2 == 0x8f || (b2 >= 0xaa && b2 <= 0xae))) ||
          (b1 == 0x81 && b2 >= 0xa6 && b2 <= 0xa9))
        return "must not contain text-direction control characters";
    }
  }
  return {};
}

std::span<const HostField> host_fields() {
  return kHostFields;
}

HostsFileResult parse_hosts_file(const std::string& text, const std::string& path) {
  Diagnostics diags{path, {}};
  auto root = parse_toml(text, diags);
  if (!root) return fail(std::move(diags.list));

  check_top_level_keys(*root, diags);
  const Defaults defaults = read_defaults(*root, diags);
  auto hosts = read_hosts(*root, defaults, diags);
  check_unique_names(hosts, diags);
  RendezvousSettings rendezvous = read_rendezvous(*root, diags);

  if (!diags.list.empty()) {
    // Tables iterate in key order; report in file order instead.
    std::stable_sort(diags.list.begin(), diags.list.end(), [](const auto& a, const auto& b) {
      return std::tie(a.line, a.column) < std::tie(b.line, b.column);
    });
    return fail(std::move(diags.list));
  }
  HostsFile file;
  file.path = path;
  for (auto& host : hosts) file.hosts.push_back(std::move(host.entry));
  file.rendezvous = std::move(rendezvous);
  return file;
}

Result<std::string, Diagnostic> read_host_list_file(const std::string& path) {
  const auto failed = [&](const std::string& why) { return fail(Diagnostic{path, 0, 0, why}); };
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                       &std::fclose);
  if (!file) return failed(std::string("cannot open: ") + std::strerror(errno));
  std::string text;
  char buffer[64 * 1024];
  for (;;) {
    const std::size_t n = std::fread(buffer, 1, sizeof buffer, file.get());
    text.append(buffer, n);
    if (text.size() > kMaxFileSize) {
      return failed("larger than " + std::to_string(kMaxFileSize >> 20) + " MiB; not a hosts file");
    }
    if (n < sizeof buffer) break;
  }
  if (std::ferror(file.get())) return failed(std::string("cannot read: ") + std::strerror(errno));
  return text;
}

HostsFileResult load_hosts_file(const std::string& path) {
  auto text = read_host_list_file(path);
  if (!text) return fail(std::vector<Diagnostic>{text.error()});
  return parse_hosts_file(*text, path);
}

bool is_local_host(const HostEntry& host) {
  switch (host.transport) {
    case TransportKind::local:
      return true;
    case TransportKind::ssh:
    case TransportKind::slurm:
      return false;
    case TransportKind::automatic:
      break;
  }
  // A port means an sshd to talk to (tests run one on 127.0.0.1:2222).
  if (host.port) return false;
  return is_loopback_address(host.address);
}

}  // namespace dlaunch
