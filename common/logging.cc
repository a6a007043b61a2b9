#include "common/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace sidetable::common {
namespace {

// %j: the message as a JSON string body (quotes, backslashes and control
// characters escaped), so JSON-lines output stays valid whatever is logged.
class JsonMessageFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    for (char c : std::string_view(msg.payload.data(), msg.payload.size())) {
      switch (c) {
        case '"': dest.append(std::string_view("\\\"")); break;
        case '\\': dest.append(std::string_view("\\\\")); break;
        case '\n': dest.append(std::string_view("\\n")); break;
        case '\t': dest.append(std::string_view("\\t")); break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            dest.append(std::string_view(buf));
          } else {
            dest.push_back(c);
          }
      }
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonMessageFlag>();
  }
};

}  // namespace

Status SetupLogging(const std::string& level, const std::string& format, const std::string& name) {
  auto lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off") {
    return Status(Code::kInvalidInput, "log.level: unknown level '" + level + "'");
  }
  auto logger = std::make_shared<spdlog::logger>(name,
                                                 std::make_shared<spdlog::sinks::stderr_sink_mt>());
  if (format == "json") {
    auto f = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    f->add_flag<JsonMessageFlag>('j').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","logger":"%n","msg":"%j"})");
    logger->set_formatter(std::move(f));
  } else if (format == "text") {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%n] %v");
  } else {
    return Status(Code::kInvalidInput, "log.format must be text or json");
  }
  logger->set_level(lvl);
  logger->flush_on(spdlog::level::info);  // info and above are rare: flush so crashes lose nothing
  spdlog::set_default_logger(logger);
  return Status::OK();
}

}  // namespace sidetable::common
