# Untrusted strings: callers, names, keys, filters; replies always valid UTF-8.
st_test(NAME reliability_strings_test
  SOURCES strings_test.cc
  DEPS sidetable::client sidetable::protocol sidetable::testing
  LABEL reliability
  TIMEOUT 120)
target_compile_definitions(reliability_strings_test PRIVATE
  SIDETABLE_BIN="$<TARGET_FILE:sidetable>"
  SIDETABLE_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
add_dependencies(reliability_strings_test sidetable)
