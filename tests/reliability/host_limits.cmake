# Limits of the host (session 43): the sidecar under a small `ulimit -s`.
st_test(NAME reliability_host_limits_test
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/host_limits_test.cc
  DEPS sidetable::client sidetable::protocol
  LABEL reliability TIMEOUT 120)
target_compile_definitions(reliability_host_limits_test PRIVATE SIDETABLE_BIN="$<TARGET_FILE:sidetable>")
add_dependencies(reliability_host_limits_test sidetable)
