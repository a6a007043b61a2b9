# Exactly-once retries (issue 14): replies lost to SIGKILL, and writes under
# random SIGKILLs through the client's own retries, against real processes.
st_test(NAME retries_test
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/retries_test.cc
  DEPS sidetable::client
  LABEL reliability TIMEOUT 300)
target_compile_definitions(retries_test PRIVATE SIDETABLE_BIN="$<TARGET_FILE:sidetable>")
add_dependencies(retries_test sidetable)
