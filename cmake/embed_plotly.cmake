# Run at build time (cmake -P) by src/analysis/CMakeLists.txt, on every build:
# writes the source that embeds the Plotly.js bundle into nccl-inspector, and
# the third-party notice installed next to it.
#   -DBUNDLE=<plotly .min.js>  -DSTUB=<plotly_none.cpp>  -DOUT=<generated .cpp>  -DNOTICE=<notice file>
# With the bundle: an assembler .incbin of the file itself (no C++ array to
# compile; the object builds in well under a second). The bundle's SHA-256 is
# written into the source, so the object is rebuilt when the file changes, and
# only then (the outputs are rewritten only when their content changes).
# Without it: the stub (report then says how to get the bundle) and no notice.
# The license text is read from the installed npm package: never a copy in git.
cmake_minimum_required(VERSION 3.25)
foreach(v BUNDLE STUB OUT NOTICE)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "embed_plotly.cmake: -D${v}=... missing")
  endif()
endforeach()

if(NOT BUNDLE OR NOT EXISTS "${BUNDLE}")
  file(READ "${STUB}" _src)
  file(REMOVE "${NOTICE}")
else()
  if(BUNDLE MATCHES "[\"\\\\\n]")
    message(FATAL_ERROR "embed_plotly.cmake: the bundle's path may not contain quotes or backslashes: ${BUNDLE}")
  endif()
  get_filename_component(_dir "${BUNDLE}" DIRECTORY)
  get_filename_component(_file "${BUNDLE}" NAME)
  file(SHA256 "${BUNDLE}" _sha)
  file(SIZE "${BUNDLE}" _size)
  # The package name and version, for the notice and the CLI's messages.
  set(_name "plotly.js")
  set(_version "")
  if(EXISTS "${_dir}/package.json")
    file(READ "${_dir}/package.json" _pkg)
    string(JSON _name ERROR_VARIABLE _err GET "${_pkg}" name)
    string(JSON _version ERROR_VARIABLE _err GET "${_pkg}" version)
    if(NOT _name)
      set(_name "plotly.js")
    endif()
  endif()
  set(_label "${_name}")
  if(_version)
    string(APPEND _label " ${_version}")
  endif()
  string(CONFIGURE [=[// Generated at build time by cmake/embed_plotly.cmake: do not edit, do not commit.
// Embeds @BUNDLE@
// (@_size@ bytes, sha256 @_sha@) into the nccl-inspector binary.
#include "src/analysis/plotly_bundle.h"

// The file's bytes in read-only data, followed by a NUL.
__asm__(".pushsection .rodata.ni_plotly_js,\"a\",@progbits\n"
        ".balign 16\n"
        ".globl ni_plotly_js_begin\n"
        ".hidden ni_plotly_js_begin\n"
        "ni_plotly_js_begin:\n"
        ".incbin \"@BUNDLE@\"\n"
        ".globl ni_plotly_js_end\n"
        ".hidden ni_plotly_js_end\n"
        "ni_plotly_js_end:\n"
        ".byte 0\n"
        ".popsection\n");

extern "C" {
extern const char ni_plotly_js_begin[] __attribute__((visibility("hidden")));
extern const char ni_plotly_js_end[] __attribute__((visibility("hidden")));
}

namespace ni::analysis {

PlotlyBundle embedded_plotly() {
  return {std::string_view(ni_plotly_js_begin, static_cast<std::size_t>(ni_plotly_js_end - ni_plotly_js_begin)),
          "@_label@"};
}

}  // namespace ni::analysis
]=] _src @ONLY)
  if(EXISTS "${_dir}/LICENSE")
    file(READ "${_dir}/LICENSE" _license)
  else()
    set(_license "(No LICENSE file next to the bundle. plotly.js is MIT-licensed, Copyright (c) Plotly Technologies Inc.;\n"
                 "the text is at https://github.com/plotly/plotly.js/blob/master/LICENSE.)\n")
  endif()
  string(CONFIGURE [=[Third-party software in nccl-inspector
======================================

The `nccl-inspector report` command writes HTML pages that contain, unmodified,
@_label@ (https://github.com/plotly/plotly.js),
embedded in the nccl-inspector executable at build time (the file
@_file@ of that npm package).
It is distributed under the MIT license, reproduced here:

@_license@]=] _notice @ONLY)
  file(WRITE "${NOTICE}.tmp" "${_notice}")
  file(COPY_FILE "${NOTICE}.tmp" "${NOTICE}" ONLY_IF_DIFFERENT)
  file(REMOVE "${NOTICE}.tmp")
endif()
file(WRITE "${OUT}.tmp" "${_src}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
