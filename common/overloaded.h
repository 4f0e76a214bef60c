// A visitor made of lambdas, one per alternative of a std::variant:
// std::visit(Overloaded{[](const A&) {...}, [](const B&) {...}}, v).
#pragma once

namespace dlaunch {

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

}  // namespace dlaunch
