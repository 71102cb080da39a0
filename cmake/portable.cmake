# The analyzer (nccl-inspector) and the emulator (nccl-emu) as binaries that need glibc alone, like the plugin
# (docs/deployment.md): simdjson compiled from its source (Debian ships only a shared library; scripts/setup-deps.sh
# fetches Debian's source package into .deps/simdjson), libstdc++ and libgcc, zlib and libdeflate linked in
# statically. Without the source the build falls back to the system's libsimdjson.so and ordinary dynamic links.
#
# Sets: NI_SIMDJSON (the target to link), NI_PORTABLE_TOOLS (whether the tools are linked statically), and
# ni_portable_exe(TARGET) for the tools. Sanitizer and fuzz builds compile simdjson from source too but keep the
# dynamic runtime (the sanitizers' runtimes are shared libraries).
set(NCCL_INSPECTOR_SIMDJSON_SOURCE "${PROJECT_SOURCE_DIR}/.deps/simdjson" CACHE PATH
    "simdjson's source tree (holds singleheader/simdjson.cpp), compiled into the analyzer")
option(NCCL_INSPECTOR_PORTABLE_TOOLS "Link nccl-inspector and nccl-emu to need glibc alone (needs the simdjson source)" ON)

set(_ni_sj "${NCCL_INSPECTOR_SIMDJSON_SOURCE}/singleheader")
if(EXISTS "${_ni_sj}/simdjson.cpp" AND EXISTS "${_ni_sj}/simdjson.h")
  add_library(ni_simdjson STATIC "${_ni_sj}/simdjson.cpp")
  target_include_directories(ni_simdjson SYSTEM PUBLIC "${_ni_sj}")
  # Third-party code: no project warnings, no sanitizer or fuzzer instrumentation (as the shared library it
  # replaces had none), optimised whatever the build type.
  target_compile_options(ni_simdjson PRIVATE -w -O2 -fno-sanitize=all)
  set_target_properties(ni_simdjson PROPERTIES POSITION_INDEPENDENT_CODE ON CXX_VISIBILITY_PRESET hidden
                                               INTERPROCEDURAL_OPTIMIZATION OFF)
  set(NI_SIMDJSON ni_simdjson)
  message(STATUS "simdjson: compiled from ${NCCL_INSPECTOR_SIMDJSON_SOURCE}")
else()
  find_package(simdjson REQUIRED)
  set(NI_SIMDJSON simdjson::simdjson)
  message(WARNING "simdjson: no source at ${NCCL_INSPECTOR_SIMDJSON_SOURCE} (scripts/setup-deps.sh fetches it); "
                  "nccl-inspector links the system's libsimdjson.so and needs it at run time")
endif()

set(NI_PORTABLE_TOOLS OFF)
if(NCCL_INSPECTOR_PORTABLE_TOOLS AND NI_SIMDJSON STREQUAL "ni_simdjson" AND NOT NCCL_INSPECTOR_SANITIZE
   AND NOT NCCL_INSPECTOR_FUZZ)
  find_library(NI_ZLIB_STATIC NAMES libz.a)
  if(NI_ZLIB_STATIC)
    set(NI_PORTABLE_TOOLS ON)
  else()
    message(WARNING "no static zlib (libz.a, zlib1g-dev): the tools link libz.so")
  endif()
endif()
message(STATUS "nccl-inspector, nccl-emu: need glibc alone: ${NI_PORTABLE_TOOLS}")

# zlib for ni_analysis: the static archive in a portable tool, the shared library elsewhere (Debian's libz.a is
# not position-independent, so the Python extension cannot take it). NI_STATIC_RUNTIME is a property of the
# executable being linked.
add_library(ni_zlib INTERFACE)
find_package(ZLIB REQUIRED)
if(NI_PORTABLE_TOOLS)
  target_link_libraries(ni_zlib INTERFACE
    "$<IF:$<BOOL:$<TARGET_PROPERTY:NI_STATIC_RUNTIME>>,${NI_ZLIB_STATIC},ZLIB::ZLIB>")
else()
  target_link_libraries(ni_zlib INTERFACE ZLIB::ZLIB)
endif()

# A tool executable: static libstdc++/libgcc (and zlib), with the two newer glibc symbols they reference defined
# locally (plugin/glibc_compat.c), so the binary's glibc floor is the plugin's.
function(ni_portable_exe target)
  if(NOT NI_PORTABLE_TOOLS)
    return()
  endif()
  set_target_properties(${target} PROPERTIES NI_STATIC_RUNTIME ON)
  target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/plugin/glibc_compat.c)
  target_link_libraries(${target} PRIVATE ${CMAKE_DL_LIBS})
  target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc)
endfunction()
