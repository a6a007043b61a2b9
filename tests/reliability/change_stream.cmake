# Issue 12, items 1 and 6: large changes reach Kafka in chunks that the
# worker, the replay source and the test reader join; a Kafka outage shows
# at once and the backlog bound is exact; a corrupt watermark stops start-up
# with a clear message. Real `sidetable`, `sidetable-worker` and
# `sidetable-cli` against a mock cluster the test owns.
st_test(NAME reliability_change_stream_test
  SOURCES change_stream_test.cc
  DEPS sidetable::client sidetable::common sidetable::events sidetable::engine sidetable::embedded_kafka sidetable::testing
       PkgConfig::RDKAFKA PkgConfig::HTTPLIB
  LABEL reliability
  TIMEOUT 300)
target_compile_definitions(reliability_change_stream_test PRIVATE
  SIDETABLE_BIN="$<TARGET_FILE:sidetable>"
  SIDETABLE_WORKER_BIN="$<TARGET_FILE:sidetable-worker>"
  SIDETABLE_CLI="$<TARGET_FILE:sidetable-cli>")
add_dependencies(reliability_change_stream_test sidetable sidetable-worker sidetable-cli)
