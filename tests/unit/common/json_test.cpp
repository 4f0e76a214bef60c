#include <doctest/doctest.h>

#include "common/json.h"

using namespace dlaunch;

TEST_CASE("json writer nests containers and places commas") {
  JsonWriter j;
  j.begin_object();
  j.key("a").value(1);
  j.key("b").begin_array().value("x").value(true).null().value(
      std::uint64_t{18446744073709551615ULL});
  j.end_array();
  j.key("c").begin_object().end_object();
  j.key("d").value(0.5);
  j.end_object();
  CHECK(j.text() == R"({"a":1,"b":["x",true,null,18446744073709551615],"c":{},"d":0.5})");
}

TEST_CASE("json strings escape quotes, backslashes and control bytes") {
  CHECK(json_quote("a\"b\\c\n\t\x01") == R"("a\"b\\c\n\t\u0001")");
  CHECK(json_quote("é") == "\"é\"");
  CHECK(json_quote("\x7f") == R"("\u007f")");  // TOML needs DEL escaped
  JsonWriter j;
  j.value(1.0 / 0.0);
  CHECK(j.text() == "null");
}

TEST_CASE("json strings keep valid UTF-8 and show each invalid byte as U+FFFD") {
  CHECK(json_quote("h\xc3\xa9te") == "\"h\xc3\xa9te\"");
  CHECK(json_quote("\xe2\x82\xac \xf0\x9f\x98\x80") == "\"\xe2\x82\xac \xf0\x9f\x98\x80\"");
  CHECK(json_quote("a\xff"
                   "b") == "\"a\\ufffdb\"");
  CHECK(json_quote("\xc3") == "\"\\ufffd\"");                        // cut short
  CHECK(json_quote("\xc0\xaf") == "\"\\ufffd\\ufffd\"");             // overlong '/'
  CHECK(json_quote("\xed\xa0\x80") == "\"\\ufffd\\ufffd\\ufffd\"");  // a surrogate
}

TEST_CASE("a string member is found by its key and unescaped, the last one winning") {
  const std::string torch =
      R"({"message": {"message": "RuntimeError: boom", "extraInfo": {"py_callstack": )"
      R"("Traceback (most recent call last):\n  File \"t.py\", line 3\nRuntimeError: boom\n", )"
      R"("timestamp": "1700000000"}}})";
  CHECK(json_string_member(torch, "message") == "RuntimeError: boom");
  CHECK(json_string_member(torch, "py_callstack") ==
        "Traceback (most recent call last):\n  File \"t.py\", line 3\nRuntimeError: boom\n");
  CHECK_FALSE(json_string_member(torch, "extraInfo"));  // an object, not a string
  CHECK_FALSE(json_string_member(torch, "absent"));
  CHECK(json_string_member(R"({"k": "caf\u00e9 \/ \\ \t"})", "k") == "caf\xc3\xa9 / \\ \t");
  CHECK_FALSE(json_string_member(R"({"k": "cut short)", "k"));
  CHECK(json_string_member(R"({"a": "k", "k": "v"})", "k") == "v");  // "k" as a value is no key
}
