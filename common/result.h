// How a fallible function says it failed (common/README.md): it returns
// Result<T>, the value or an error message a user can act on, naming the
// file and line, the host or the rank. A caller tests it and passes the
// message on, adding where it came from:
//
//   Result<GitSource> parse_git_source(std::string_view text) {
//     if (text.empty()) return fail("--sync-git needs a URL");
//     return GitSource{...};
//   }
//
//   auto source = parse_git_source(arg);
//   if (!source) return usage_error(source.error());
//   use(*source);
//
// E is the error's type: a message (std::string) unless the caller needs
// more, such as every Diagnostic of a file.
//
// A check with nothing to give back returns Result<void>: `return {};` when
// all is well.
//
//   Result<void> check_mount(std::string_view text) {
//     if (text.find(':') == text.npos) return fail("--mount " + ...);
//     return {};
//   }
//
//   if (auto checked = check_mount(text); !checked) return usage_error(checked.error());
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace dlaunch {

template <class E>
struct Failure {
  E error;
};

// The failed side of a Result, whatever its value type.
template <class E>
Failure<std::decay_t<E>> fail(E&& error) {
  return {std::forward<E>(error)};
}
inline Failure<std::string> fail(const char* message) {
  return {message};
}

template <class T, class E = std::string>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  template <class F>
  requires std::is_constructible_v<E, F&&> Result(Failure<F> failure)  // NOLINT: implicit by design
      : v_(std::in_place_index<1>, std::move(failure.error)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const E& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, E> v_;
};

template <class E>
class [[nodiscard]] Result<void, E> {
 public:
  Result() = default;  // success
  template <class F>
  requires std::is_constructible_v<E, F&&> Result(Failure<F> failure)  // NOLINT: implicit by design
      : error_(std::move(failure.error)) {}

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const E& error() const { return *error_; }

 private:
  std::optional<E> error_;
};

}  // namespace dlaunch
