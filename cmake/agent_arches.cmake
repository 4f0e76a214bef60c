# One cross build per architecture in DLAUNCH_AGENT_ARCHES other than this
# machine's: the project configured with DLAUNCH_AGENT_ONLY and the
# architecture's toolchain file, its dlaunch-agent copied to
# bin/dlaunch-agent-<arch> beside the native one, and packaged in lib/dlaunch.
include(ExternalProject)
set(DLAUNCH_FOREIGN_AGENTS "")
foreach(arch IN LISTS DLAUNCH_AGENT_ARCHES)
  if(arch STREQUAL CMAKE_SYSTEM_PROCESSOR)
    continue()
  endif()
  set(toolchain ${PROJECT_SOURCE_DIR}/cmake/toolchain-${arch}.cmake)
  if(NOT EXISTS ${toolchain})
    message(FATAL_ERROR "DLAUNCH_AGENT_ARCHES: no toolchain file for ${arch} "
                        "(cmake/toolchain-${arch}.cmake); known: x86_64, aarch64")
  endif()
  set(agent_file ${CMAKE_BINARY_DIR}/bin/dlaunch-agent-${arch})
  # The build type's flags too, so a tree configured without -g (scripts/test.sh)
  # builds its cross agent without it as well.
  string(TOUPPER "${CMAKE_BUILD_TYPE}" build_type)
  ExternalProject_Add(dlaunch-agent-${arch}
    SOURCE_DIR ${PROJECT_SOURCE_DIR}
    BINARY_DIR ${CMAKE_BINARY_DIR}/agent-${arch}
    CMAKE_GENERATOR ${CMAKE_GENERATOR}
    # In unity batches: the native build compiles these same files one by one
    # (and so shows a missing #include); this one only has to give the binary.
    CMAKE_ARGS -DCMAKE_TOOLCHAIN_FILE=${toolchain} -DDLAUNCH_AGENT_ONLY=ON
               -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE} -DDLAUNCH_WERROR=${DLAUNCH_WERROR}
               -DCMAKE_UNITY_BUILD=ON
               "-DCMAKE_C_FLAGS_${build_type}=${CMAKE_C_FLAGS_${build_type}}"
               "-DCMAKE_CXX_FLAGS_${build_type}=${CMAKE_CXX_FLAGS_${build_type}}"
    BUILD_COMMAND ${CMAKE_COMMAND} --build <BINARY_DIR> --target dlaunch-agent
    INSTALL_COMMAND ${CMAKE_COMMAND} -E copy <BINARY_DIR>/bin/dlaunch-agent ${agent_file}
    # Its sources are this project's: let the sub-build decide what changed.
    BUILD_ALWAYS ON
    BUILD_BYPRODUCTS ${agent_file})
  add_dependencies(dlaunch-agent-${arch} dlaunch-agent)
  # lib/dlaunch, where dlaunch looks (launcher/cli/run.cpp), not the multiarch libdir.
  install(PROGRAMS ${agent_file} DESTINATION lib/dlaunch)
  list(APPEND DLAUNCH_FOREIGN_AGENTS ${arch})
endforeach()
