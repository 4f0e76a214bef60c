# Sourced by demo.sh and test.sh: `configure DIR [CMAKE ARGS...]` configures
# the build tree DIR with Ninja, or with the generator DIR was first configured
# with (CMake refuses to switch generators in an existing tree). A tree made
# with another C++ compiler than -DCMAKE_CXX_COMPILER asks for is made anew:
# CMake cannot switch compilers in place either.
configure() {
  local dir=$1
  shift
  local generator=(-G Ninja)
  if [[ -f "$dir/CMakeCache.txt" ]]; then
    local wanted="" arg
    for arg in "$@"; do
      if [[ "$arg" == -DCMAKE_CXX_COMPILER=* ]]; then wanted=$(command -v "${arg#*=}" || true); fi
    done
    local cached_compiler
    cached_compiler=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$dir/CMakeCache.txt")
    if [[ -n "$wanted" && "$(readlink -f "$wanted")" != "$(readlink -f "$cached_compiler")" ]]; then
      echo "configure: $dir was made with $cached_compiler; making it anew with $wanted"
      rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
    fi
  fi
  if [[ -f "$dir/CMakeCache.txt" ]]; then
    local cached
    cached=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$dir/CMakeCache.txt")
    if [[ -n "$cached" ]]; then generator=(-G "$cached"); fi
  fi
  cmake -S . -B "$dir" "${generator[@]}" "$@" >/dev/null
}
