// Reading a Kafka message's headers, for every process that consumes the
// change stream (workers, replay tools, tests). Header-only: no library to
// link beyond librdkafka, which every consumer already has.
#pragma once

#include <librdkafka/rdkafka.h>

#include <optional>
#include <string_view>

namespace sidetable::kafka {

// The last value of header `name`, or nullopt when the message has no such
// header. The view lives as long as the message.
inline std::optional<std::string_view> HeaderValue(const rd_kafka_message_t* m, const char* name) {
  rd_kafka_headers_t* headers = nullptr;
  if (rd_kafka_message_headers(m, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR || headers == nullptr) {
    return std::nullopt;
  }
  const void* value = nullptr;
  size_t size = 0;
  if (rd_kafka_header_get_last(headers, name, &value, &size) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return std::nullopt;
  }
  return std::string_view(static_cast<const char*>(value), value ? size : 0);
}

}  // namespace sidetable::kafka
