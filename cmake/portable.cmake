# The analyzer (nccl-inspector) and the emulator (nccl-emu) as binaries that need glibc alone, like the plugin
# (docs/deployment.md): simdjson compiled from its source (Debian ships only a shared library; scripts/setup-deps.sh
# fetches Debian's source package into .deps/simdjson), libstdc++ and libgcc, zlib and libdeflate linked in
# statically.
#
# NCCL_INSPECTOR_PORTABLE_TOOLS: AUTO (default) links them so when it can and says why not otherwise (no simdjson
# source: the system's libsimdjson.so; no libz.a); ON requires it (scripts/test.sh, so CI checks it); OFF keeps
# the dynamic runtime. Sanitizer and fuzz builds are never static (the sanitizers' runtimes are shared libraries).
#
# Sets: NI_SIMDJSON (the target ni_analysis links), NI_SIMDJSON_FROM_SOURCE, NI_PORTABLE_TOOLS, the target
# ni_zlib (for ni_analysis), and ni_portable_exe(TARGET) for the tools.
set(NCCL_INSPECTOR_SIMDJSON_SOURCE "${PROJECT_SOURCE_DIR}/.deps/simdjson" CACHE PATH
    "simdjson's source tree (holds singleheader/simdjson.cpp), compiled into the analyzer")
set(NCCL_INSPECTOR_PORTABLE_TOOLS AUTO CACHE STRING
    "Link nccl-inspector and nccl-emu to need glibc alone: AUTO, ON (required) or OFF")
set_property(CACHE NCCL_INSPECTOR_PORTABLE_TOOLS PROPERTY STRINGS AUTO ON OFF)

set(_ni_why "")  # why the tools cannot be linked to need glibc alone
if(NCCL_INSPECTOR_SANITIZE OR NCCL_INSPECTOR_FUZZ)
  set(_ni_why "sanitizer and fuzz builds keep the dynamic runtime")
endif()

set(NI_SIMDJSON_FROM_SOURCE OFF)
if(NCCL_INSPECTOR_ANALYZER)
  set(_ni_sj "${NCCL_INSPECTOR_SIMDJSON_SOURCE}/singleheader")
  if(EXISTS "${_ni_sj}/simdjson.cpp" AND EXISTS "${_ni_sj}/simdjson.h")
    add_library(ni_simdjson STATIC "${_ni_sj}/simdjson.cpp")
    target_include_directories(ni_simdjson SYSTEM PUBLIC "${_ni_sj}")
    # Third-party code: no project warnings, no sanitizer or fuzzer instrumentation (as the shared library it
    # replaces had none), no link-time optimisation (its warnings would surface at the tools' -Werror link),
    # optimised whatever the build type.
    target_compile_options(ni_simdjson PRIVATE -w -O2 -fno-sanitize=all)
    set_target_properties(ni_simdjson PROPERTIES POSITION_INDEPENDENT_CODE ON CXX_VISIBILITY_PRESET hidden
                          INTERPROCEDURAL_OPTIMIZATION OFF INTERPROCEDURAL_OPTIMIZATION_RELEASE OFF
                          INTERPROCEDURAL_OPTIMIZATION_RELWITHDEBINFO OFF INTERPROCEDURAL_OPTIMIZATION_MINSIZEREL OFF)
    set(NI_SIMDJSON ni_simdjson)
    set(NI_SIMDJSON_FROM_SOURCE ON)
    message(STATUS "simdjson: compiled from ${NCCL_INSPECTOR_SIMDJSON_SOURCE}")
  else()
    find_package(simdjson REQUIRED)
    set(NI_SIMDJSON simdjson::simdjson)
    message(STATUS "simdjson: no source at ${NCCL_INSPECTOR_SIMDJSON_SOURCE} (scripts/setup-deps.sh fetches it); "
                   "nccl-inspector links the system's libsimdjson.so")
    if(NOT _ni_why)
      set(_ni_why "no simdjson source at ${NCCL_INSPECTOR_SIMDJSON_SOURCE} (scripts/setup-deps.sh fetches it)")
    endif()
  endif()
  find_package(ZLIB REQUIRED)
  find_library(NI_ZLIB_STATIC NAMES libz.a)
  if(NOT NI_ZLIB_STATIC AND NOT _ni_why)
    set(_ni_why "no static zlib (libz.a, zlib1g-dev)")
  endif()
endif()

set(NI_PORTABLE_TOOLS OFF)
if(NCCL_INSPECTOR_PORTABLE_TOOLS STREQUAL "OFF")
  message(STATUS "nccl-inspector, nccl-emu: dynamic runtime (NCCL_INSPECTOR_PORTABLE_TOOLS=OFF)")
elseif(NCCL_INSPECTOR_SANITIZE OR NCCL_INSPECTOR_FUZZ)
  message(STATUS "nccl-inspector, nccl-emu: dynamic runtime (${_ni_why})")
elseif(_ni_why)
  if(NCCL_INSPECTOR_PORTABLE_TOOLS STREQUAL "ON")
    message(FATAL_ERROR "NCCL_INSPECTOR_PORTABLE_TOOLS=ON, but the tools cannot need glibc alone: ${_ni_why}")
  endif()
  message(WARNING "nccl-inspector, nccl-emu: dynamic runtime (they need libstdc++ and more at run time): ${_ni_why}")
else()
  set(NI_PORTABLE_TOOLS ON)
  message(STATUS "nccl-inspector, nccl-emu: need glibc alone")
endif()

# zlib for ni_analysis: the static archive in a portable tool, the shared library elsewhere (Debian's libz.a is
# not position-independent, so the Python extension cannot take it). NI_STATIC_RUNTIME is a property of the
# executable being linked.
if(NCCL_INSPECTOR_ANALYZER)
  add_library(ni_zlib INTERFACE)
  if(NI_PORTABLE_TOOLS)
    target_link_libraries(ni_zlib INTERFACE
      "$<IF:$<BOOL:$<TARGET_PROPERTY:NI_STATIC_RUNTIME>>,${NI_ZLIB_STATIC},ZLIB::ZLIB>")
  else()
    target_link_libraries(ni_zlib INTERFACE ZLIB::ZLIB)
  endif()
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
