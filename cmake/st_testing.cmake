# st_test(NAME <name> SOURCES ... [DEPS ...] [LABEL unit|integration|e2e]
#         [TIMEOUT seconds])
#
# One GoogleTest binary per call; every TEST inside becomes a CTest test
# (gtest_discover_tests) carrying the label, so `ctest -L unit` runs just the
# fast ones.
include(GoogleTest)
find_package(GTest REQUIRED)

function(st_test)
  cmake_parse_arguments(ARG "" "NAME;LABEL;TIMEOUT" "SOURCES;DEPS" ${ARGN})
  if(NOT ARG_LABEL)
    set(ARG_LABEL unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_executable(${ARG_NAME} ${ARG_SOURCES})
  target_compile_options(${ARG_NAME} PRIVATE ${ST_WARNINGS})
  target_include_directories(${ARG_NAME} PRIVATE ${CMAKE_SOURCE_DIR})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  gtest_discover_tests(${ARG_NAME}
    PROPERTIES LABELS ${ARG_LABEL} TIMEOUT ${ARG_TIMEOUT}
    DISCOVERY_TIMEOUT 60)
endfunction()
