# Install layout for documentation and deployment recipes, and CPack packages.
#
#   <prefix>/lib/libnccl-profiler-inspector.so      (plugin/CMakeLists.txt, component "plugin")
#   <prefix>/bin/nccl-emu, bin/nccl-inspector         (their own CMakeLists, default component)
#   <prefix>/share/doc/nccl-inspector/               README.md, LICENSE, docs/*.md  (component "plugin");
#                                                    THIRD-PARTY-NOTICES.txt: the license of the Plotly.js
#                                                    embedded in nccl-inspector (src/analysis, default component)
#   <prefix>/share/nccl-inspector/{slurm,docker,k8s} deployment recipes           (component "plugin")
#
# Packages (cpack in the build directory, or `cmake --build build --target package`):
#   nccl-inspector_<ver>_<arch>.deb        the plugin, docs and recipes; depends on libc6 only
#   nccl-inspector-tools_<ver>_<arch>.deb  nccl-emu and the nccl-inspector analyzer; depends on the
#                                          plugin package and on what dpkg-shlibdeps finds
#   nccl-inspector-<ver>-Linux-<arch>.tar.gz  everything, relative paths (unpack anywhere, e.g. /opt)

set(NI_DOC_DIR "${CMAKE_INSTALL_DATADIR}/doc/nccl-inspector")
set(NI_SHARE_DIR "${CMAKE_INSTALL_DATADIR}/nccl-inspector")

install(FILES "${PROJECT_SOURCE_DIR}/README.md" "${PROJECT_SOURCE_DIR}/LICENSE"
        DESTINATION "${NI_DOC_DIR}" COMPONENT plugin)
file(GLOB _ni_docs CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/docs/*.md")
install(FILES ${_ni_docs} DESTINATION "${NI_DOC_DIR}/docs" COMPONENT plugin)
# What the docs show and link: their images, and the Grafana dashboard (also under share/, where a provisioning
# setup looks for it).
install(DIRECTORY "${PROJECT_SOURCE_DIR}/docs/img" "${PROJECT_SOURCE_DIR}/docs/grafana"
        DESTINATION "${NI_DOC_DIR}/docs" COMPONENT plugin)
install(FILES "${PROJECT_SOURCE_DIR}/docs/grafana/nccl-inspector.json" DESTINATION "${NI_SHARE_DIR}/grafana"
        COMPONENT plugin)
# The log format's JSON Schema, beside the doc that links it and under share/ for validators.
install(FILES "${PROJECT_SOURCE_DIR}/docs/log-format.schema.json" DESTINATION "${NI_DOC_DIR}/docs" COMPONENT plugin)
install(FILES "${PROJECT_SOURCE_DIR}/docs/log-format.schema.json" DESTINATION "${NI_SHARE_DIR}/schema"
        COMPONENT plugin)

foreach(_ni_recipe slurm docker k8s python)
  if(IS_DIRECTORY "${PROJECT_SOURCE_DIR}/scripts/${_ni_recipe}")
    install(DIRECTORY "${PROJECT_SOURCE_DIR}/scripts/${_ni_recipe}" DESTINATION "${NI_SHARE_DIR}"
            COMPONENT plugin
            FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
            PATTERN "*.sh" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                                        WORLD_READ WORLD_EXECUTE
            PATTERN "*.sbatch" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                                           WORLD_READ WORLD_EXECUTE)
  endif()
endforeach()
if(EXISTS "${PROJECT_SOURCE_DIR}/scripts/gpu-check.sh")
  install(PROGRAMS "${PROJECT_SOURCE_DIR}/scripts/gpu-check.sh" DESTINATION "${NI_SHARE_DIR}" COMPONENT plugin)
endif()

# ---------------------------------------------------------------------------------------------------------------
# CPack
set(NCCL_INSPECTOR_MAINTAINER "nccl-inspector developers <nccl-inspector@users.noreply.github.com>"
    CACHE STRING "Maintainer written into the packages")

set(CPACK_PACKAGE_NAME "nccl-inspector")
set(CPACK_PACKAGE_VENDOR "nccl-inspector")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_CONTACT "${NCCL_INSPECTOR_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "NCCL profiler plugin: per-collective GPU timing logs for production jobs")
string(CONCAT CPACK_PACKAGE_DESCRIPTION
    "libnccl-profiler-inspector.so is an NCCL profiler plugin (ABI v1..v6,\n"
    "NCCL 2.23+). Set NCCL_PROFILER_PLUGIN=inspector and every process writes gzip\n"
    "JSON-lines logs with one record per collective and point-to-point operation\n"
    "(GPU kernel time, algorithm, protocol, channels, bandwidth), optionally a\n"
    "Prometheus textfile.\n"
    "The library depends on glibc only.")
set(CPACK_RESOURCE_FILE_LICENSE "${PROJECT_SOURCE_DIR}/LICENSE")
set(CPACK_RESOURCE_FILE_README "${PROJECT_SOURCE_DIR}/README.md")
set(CPACK_GENERATOR "DEB;TGZ")
set(CPACK_SOURCE_GENERATOR "TGZ")
set(CPACK_SOURCE_IGNORE_FILES "/\\\\.git/" "/build[^/]*/" "/out/" "/node_modules/" "\\\\.jsonl\\\\.gz$")
set(CPACK_PACKAGE_CHECKSUM SHA256)
set(CPACK_STRIP_FILES OFF)  # the .tar.gz keeps symbols; the .deb files are stripped into -dbgsym (below)

# .tar.gz: one archive, relative layout (bin/, lib/, share/), unpack under any prefix.
set(CPACK_ARCHIVE_COMPONENT_INSTALL OFF)

# .deb: two packages. The plugin package must be installable on GPU nodes and in containers that have nothing
# but glibc; the tools package carries the C++ executables and their library dependencies.
set(CPACK_DEB_COMPONENT_INSTALL ON)
# The .deb installs under /usr (/usr/lib is on the loader path: NCCL_PROFILER_PLUGIN=inspector just works); the
# .tar.gz keeps relative paths. CPack has no per-generator prefix variable: a project config file picks it.
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
# For DEB, each package's description carries its own synopsis (first line): CPackDeb would prepend the
# project's summary to both, unless that summary is the default.
file(WRITE "${PROJECT_BINARY_DIR}/CPackProjectConfig.cmake"
     "if(CPACK_GENERATOR STREQUAL \"TGZ\")\n  set(CPACK_PACKAGING_INSTALL_PREFIX \"\")\nendif()\n"
     "if(CPACK_GENERATOR STREQUAL \"DEB\")\n"
     "  set(CPACK_PACKAGE_DESCRIPTION_SUMMARY \"\${CPACK_DEFAULT_PACKAGE_DESCRIPTION_SUMMARY}\")\nendif()\n")
set(CPACK_PROJECT_CONFIG_FILE "${PROJECT_BINARY_DIR}/CPackProjectConfig.cmake")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${NCCL_INSPECTOR_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION "devel")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/nccl-inspector/nccl-inspector")
find_program(NI_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(NI_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # computes libc6 (>= x) etc. from the ELF files actually packaged
endif()
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)

set(CPACK_COMPONENTS_ALL plugin Unspecified)
set(CPACK_COMPONENT_PLUGIN_DISPLAY_NAME "NCCL profiler plugin")
set(CPACK_COMPONENT_UNSPECIFIED_DISPLAY_NAME "nccl-emu and nccl-inspector")
set(CPACK_COMPONENT_UNSPECIFIED_DEPENDS plugin)

set(CPACK_DEBIAN_PLUGIN_PACKAGE_NAME "nccl-inspector")
set(CPACK_DEBIAN_PLUGIN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PLUGIN_DESCRIPTION "${CPACK_PACKAGE_DESCRIPTION_SUMMARY}\n${CPACK_PACKAGE_DESCRIPTION}")
set(CPACK_DEBIAN_UNSPECIFIED_PACKAGE_NAME "nccl-inspector-tools")
set(CPACK_DEBIAN_UNSPECIFIED_FILE_NAME DEB-DEFAULT)
string(CONCAT CPACK_DEBIAN_UNSPECIFIED_DESCRIPTION
    "NCCL Inspector tools: log analyzer and GPU-free NCCL emulator\n"
    "nccl-inspector analyzes the logs written by the NCCL profiler plugin\n"
    "(percentiles, stragglers, anomalies, run comparison); nccl-emu loads any NCCL\n"
    "profiler plugin and calls it exactly as a chosen NCCL release would, without\n"
    "a GPU.")
if(NOT NI_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PLUGIN_PACKAGE_DEPENDS "libc6 (>= 2.34)")
  # What the tools link dynamically (cmake/portable.cmake): glibc alone when built to, else the C++ runtime,
  # zlib and, without simdjson's source, the system's simdjson.
  set(CPACK_DEBIAN_UNSPECIFIED_PACKAGE_DEPENDS "libc6 (>= 2.34)")
  if(NOT NI_PORTABLE_TOOLS)
    string(APPEND CPACK_DEBIAN_UNSPECIFIED_PACKAGE_DEPENDS ", libstdc++6 (>= 12), libgcc-s1")
    if(NCCL_INSPECTOR_ANALYZER)
      string(APPEND CPACK_DEBIAN_UNSPECIFIED_PACKAGE_DEPENDS ", zlib1g")
    endif()
    if(NCCL_INSPECTOR_ANALYZER AND NOT NI_SIMDJSON_FROM_SOURCE)
      string(APPEND CPACK_DEBIAN_UNSPECIFIED_PACKAGE_DEPENDS ", libsimdjson14")
    endif()
  endif()
endif()

# Debian policy (checked with lintian by tests/install/check_packages.sh): each package has its copyright and
# changelog under /usr/share/doc/<package>/; the plugin package's shared library is registered with an ldconfig
# trigger, not maintainer scripts; binaries are stripped into -dbgsym packages (the symbols stay available for
# crash reports from inside NCCL jobs). The .tar.gz keeps unstripped files.
foreach(_ni_pkg nccl-inspector nccl-inspector-tools)
  set(_ni_dir "${PROJECT_BINARY_DIR}/debian/${_ni_pkg}")
  # The libraries linked into the package's binaries, with their licenses: libdeflate in the plugin and the
  # analyzer; simdjson in the analyzer when compiled from its source; zlib in the tools built to need glibc alone.
  set(_ni_holders "2016, 2018 Eric Biggers (libdeflate, linked in statically)")
  set(_ni_licenses "Apache-2.0 and Expat")
  set(_ni_texts "license-expat.txt")
  set(_ni_files "usr/lib/libnccl-profiler-inspector.so")
  if(_ni_pkg STREQUAL "nccl-inspector-tools")
    set(_ni_files "usr/bin/nccl-emu")
    set(_ni_holders "")
    set(_ni_licenses "Apache-2.0")
    set(_ni_texts "")
    if(NCCL_INSPECTOR_ANALYZER)
      set(_ni_files "usr/bin/nccl-inspector usr/bin/nccl-emu")
      set(_ni_holders "2016, 2018 Eric Biggers (libdeflate, linked in statically)")
      set(_ni_licenses "Apache-2.0 and Expat")
      set(_ni_texts "license-expat.txt")
      if(NI_SIMDJSON_FROM_SOURCE)
        string(APPEND _ni_holders "\n 2018-2023 The simdjson authors (simdjson, linked in statically)")
      endif()
      if(NI_PORTABLE_TOOLS)
        string(APPEND _ni_holders "\n 1995-2022 Jean-loup Gailly and Mark Adler (zlib, linked in statically)")
        string(APPEND _ni_licenses " and Zlib")
        list(APPEND _ni_texts "license-zlib.txt")
      endif()
    endif()
  endif()
  set(NI_EMBEDDED_COPYRIGHT "")
  if(_ni_holders)
    set(NI_EMBEDDED_COPYRIGHT "\nFiles: ${_ni_files}\nCopyright: 2026 nccl-inspector developers\n ${_ni_holders}\nLicense: ${_ni_licenses}\n")
    foreach(_ni_t IN LISTS _ni_texts)
      file(READ "${PROJECT_SOURCE_DIR}/packaging/debian/${_ni_t}" _ni_text)
      string(APPEND NI_EMBEDDED_COPYRIGHT "\n${_ni_text}")
    endforeach()
  endif()
  configure_file("${PROJECT_SOURCE_DIR}/packaging/debian/copyright.in" "${_ni_dir}/copyright" @ONLY)
  configure_file("${PROJECT_SOURCE_DIR}/packaging/debian/changelog.in" "${_ni_dir}/changelog" @ONLY)
  execute_process(COMMAND gzip -9nf "${_ni_dir}/changelog" RESULT_VARIABLE _ni_gz)
  set(_ni_comp Unspecified)
  if(_ni_pkg STREQUAL "nccl-inspector")
    set(_ni_comp plugin)
  endif()
  install(FILES "${_ni_dir}/copyright" "${_ni_dir}/changelog.gz"
          DESTINATION "${CMAKE_INSTALL_DATADIR}/doc/${_ni_pkg}" COMPONENT ${_ni_comp})
endforeach()
# The tools embed zlib on purpose (docs/deployment.md: they need glibc alone); lintian's check for embedded
# copies is told so.
if(NI_PORTABLE_TOOLS)
  install(FILES "${PROJECT_SOURCE_DIR}/packaging/debian/nccl-inspector-tools.lintian-overrides"
          DESTINATION "${CMAKE_INSTALL_DATADIR}/lintian/overrides" RENAME nccl-inspector-tools COMPONENT Unspecified)
endif()
set(CPACK_DEBIAN_PLUGIN_PACKAGE_CONTROL_EXTRA "${PROJECT_SOURCE_DIR}/packaging/debian/triggers")
set(CPACK_DEBIAN_PLUGIN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_DEBUGINFO_PACKAGE ON)

include(CPack)
