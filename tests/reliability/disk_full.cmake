# A full disk (issue 12, item 2): the real `sidetable` on a small tmpfs that
# the test fills through the client. Needs root for the mount; skipped with a
# printed reason otherwise.
st_test(NAME disk_full_test
  SOURCES disk_full_test.cc
  DEPS sidetable::client sidetable::protocol cppzmq PkgConfig::HTTPLIB
  LABEL reliability
  TIMEOUT 300)
target_compile_definitions(disk_full_test PRIVATE SIDETABLE_BIN="$<TARGET_FILE:sidetable>")
add_dependencies(disk_full_test sidetable)
