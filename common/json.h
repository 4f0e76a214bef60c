// A small JSON writer for machine-readable output (`dlaunch check --json`):
// objects, arrays, strings (escaped as RFC 8259 asks, bytes that are not
// UTF-8 passed through), integers, doubles, booleans and null. The caller
// nests begin/end calls; commas and key quoting are the writer's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlaunch {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  // The next value's key, inside an object.
  JsonWriter& key(std::string_view name);
  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(std::int64_t number);
  JsonWriter& value(int number) { return value(static_cast<std::int64_t>(number)); }
  JsonWriter& value(std::uint64_t number);
  JsonWriter& value(double number);  // NaN and infinities as null
  JsonWriter& value(bool flag);
  JsonWriter& null();

  const std::string& text() const { return out_; }

 private:
  void before_value();

  std::string out_;
  // Per open container: whether it has an element yet.
  std::vector<bool> has_element_;
  bool after_key_ = false;
};

// `text` as a JSON string literal, quotes included.
std::string json_quote(std::string_view text);

// The string value of the last member named `key` anywhere in `json`,
// unescaped; nothing when there is none or it is not a string. A lookup, not
// a parser: enough for files another program writes in a known shape (torch's
// TORCHELASTIC_ERROR_FILE).
std::optional<std::string> json_string_member(std::string_view json, std::string_view key);

}  // namespace dlaunch
