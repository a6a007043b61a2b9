# st_test(NAME <name> SOURCES ... [DEPS ...] [LABEL unit|integration|e2e]
#         [TIMEOUT seconds])
#
# One GoogleTest binary per call; every TEST inside becomes a CTest test
# (gtest_discover_tests) carrying the label, so `ctest -L unit` runs just the
# fast ones.
include(GoogleTest)
find_package(GTest REQUIRED)

# Test sources are compiled at -O1 with line tables only (-g1) in the default
# RelWithDebInfo build. They start processes, send requests and compare
# results; the code under test comes from the parts' libraries and binaries,
# which keep the build type's -O2 -g. Half of the build's compile time was
# test sources, and these flags take 40-55% off each (docs/development.md,
# "Build choices that pay"). Backtraces keep function names and lines.
# -DSIDETABLE_TEST_CODEGEN_LIGHT=OFF compiles tests like everything else.
option(SIDETABLE_TEST_CODEGEN_LIGHT "Compile test sources at -O1 -g1 (RelWithDebInfo)" ON)
set(ST_TEST_CODEGEN "")
if(SIDETABLE_TEST_CODEGEN_LIGHT AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  set(ST_TEST_CODEGEN "$<$<CONFIG:RelWithDebInfo>:-O1;-g1>")
endif()

function(st_test)
  cmake_parse_arguments(ARG "" "NAME;LABEL;TIMEOUT" "SOURCES;DEPS" ${ARGN})
  if(NOT ARG_LABEL)
    set(ARG_LABEL unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_executable(${ARG_NAME} ${ARG_SOURCES})
  target_compile_options(${ARG_NAME} PRIVATE ${ST_WARNINGS} ${ST_TEST_CODEGEN})
  target_include_directories(${ARG_NAME} PRIVATE ${CMAKE_SOURCE_DIR})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  st_unity(${ARG_NAME})  # as the parts (cmake/st_library.cmake)
  gtest_discover_tests(${ARG_NAME}
    PROPERTIES LABELS ${ARG_LABEL} TIMEOUT ${ARG_TIMEOUT}
    DISCOVERY_TIMEOUT 60)
endfunction()
