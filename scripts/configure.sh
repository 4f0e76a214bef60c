# Sourced by demo.sh and test.sh: `configure DIR [CMAKE ARGS...]` configures
# the build tree DIR with Ninja, or with the generator DIR was first configured
# with (CMake refuses to switch generators in an existing tree).
configure() {
  local dir=$1
  shift
  local generator=(-G Ninja)
  if [[ -f "$dir/CMakeCache.txt" ]]; then
    local cached
    cached=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$dir/CMakeCache.txt")
    if [[ -n "$cached" ]]; then generator=(-G "$cached"); fi
  fi
  cmake -S . -B "$dir" "${generator[@]}" "$@" >/dev/null
}
