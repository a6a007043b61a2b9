# Floods and shutdown (issue 12, items 3 and 5): the real `sidetable` binary
# under large and malformed floods, and SIGTERM with a full queue or an
# unreachable Kafka; connection floods against the descriptor limit and
# sidecar.max_connections.
foreach(name floods_test shutdown_test connections_test)
  st_test(NAME ${name}
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/${name}.cc
    DEPS sidetable::protocol cppzmq PkgConfig::HTTPLIB
    LABEL reliability TIMEOUT 300)
  target_compile_definitions(${name} PRIVATE SIDETABLE_BIN="$<TARGET_FILE:sidetable>")
  add_dependencies(${name} sidetable)
endforeach()

# Slow readers (session 35): large query pages a connection does not read
# count against admission until sent; the connection is refused, memory stays
# bounded.
st_test(NAME slow_reader_test
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/slow_reader_test.cc
  DEPS sidetable::client sidetable::protocol cppzmq PkgConfig::HTTPLIB
  LABEL reliability TIMEOUT 300)
target_compile_definitions(slow_reader_test PRIVATE SIDETABLE_BIN="$<TARGET_FILE:sidetable>")
add_dependencies(slow_reader_test sidetable)
