# How every test is added: one function for GoogleTest programs, one for
# command-line tests (scripts, replays, consumers). Each test carries a kind
# label, so a subset runs with `ctest -L <label>`:
#   unit         in-process, no other program involved
#   integration  runs our programs together (emulator -> plugin .so -> analyzer)
#   consumer     a real outside consumer checks our output (Chromium, promtool, DuckDB, pandas, ...)
#   slow         takes more than a few seconds on its own
# and may add no-sanitizer (scripts/sanitize.sh skips it: it checks the release binary itself).
include(GoogleTest)

set(_ni_test_kinds unit integration consumer slow)

function(_ni_check_labels name labels)
  set(kind "")
  foreach(l IN LISTS labels)
    if(l IN_LIST _ni_test_kinds)
      list(APPEND kind ${l})
    elseif(NOT l STREQUAL "no-sanitizer")
      message(FATAL_ERROR "${name}: unknown test label '${l}' (${_ni_test_kinds} or no-sanitizer)")
    endif()
  endforeach()
  if(NOT kind)
    message(FATAL_ERROR "${name}: needs one of the labels ${_ni_test_kinds}")
  endif()
endfunction()

# ni_add_gtest(<target> LABEL <label> SOURCES <src>... [LIBS <lib>...] [DEFINES <def>...]
#              [DEPENDS <target>...] [TIMEOUT <s>] [SERIAL])
# A GoogleTest program; each of its test cases becomes a CTest test. SERIAL:
# its tests run alone (they time things in real time: the emulator's wire).
function(ni_add_gtest target)
  cmake_parse_arguments(T "SERIAL" "LABEL;TIMEOUT" "SOURCES;LIBS;DEFINES;DEPENDS" ${ARGN})
  _ni_check_labels(${target} "${T_LABEL}")
  add_executable(${target} ${T_SOURCES})
  target_link_libraries(${target} PRIVATE ${T_LIBS} GTest::gtest_main ni_warnings)
  if(T_DEFINES)
    target_compile_definitions(${target} PRIVATE ${T_DEFINES})
  endif()
  if(T_DEPENDS)
    add_dependencies(${target} ${T_DEPENDS})
  endif()
  set(props LABELS ${T_LABEL})
  if(T_TIMEOUT)
    list(APPEND props TIMEOUT ${T_TIMEOUT})
  endif()
  if(T_SERIAL)
    list(APPEND props RUN_SERIAL TRUE)
  endif()
  gtest_discover_tests(${target} DISCOVERY_TIMEOUT 60 PROPERTIES ${props})
endfunction()

# ni_add_command_test(<name> LABELS <label>... COMMAND <cmd> <arg>... [SKIP_RETURN_CODE <rc>] [TIMEOUT <s>]
#                     [RESOURCE_LOCK <name>])
# A test that runs one command; a command that exits SKIP_RETURN_CODE is reported as skipped.
function(ni_add_command_test name)
  cmake_parse_arguments(T "" "SKIP_RETURN_CODE;TIMEOUT;RESOURCE_LOCK" "LABELS;COMMAND" ${ARGN})
  _ni_check_labels(${name} "${T_LABELS}")
  add_test(NAME ${name} COMMAND ${T_COMMAND})
  set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}")
  if(T_SKIP_RETURN_CODE)
    set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE ${T_SKIP_RETURN_CODE})
  endif()
  if(T_TIMEOUT)
    set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT})
  endif()
  if(T_RESOURCE_LOCK)
    set_tests_properties(${name} PROPERTIES RESOURCE_LOCK ${T_RESOURCE_LOCK})
  endif()
endfunction()
