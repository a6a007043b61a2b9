#include "engine/internal/rocksdb_logger.h"

#include <spdlog/spdlog.h>

#include <charconv>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

namespace sidetable::internal {
namespace {

spdlog::level::level_enum LevelOf(rocksdb::InfoLogLevel level) {
  switch (level) {
    case rocksdb::DEBUG_LEVEL: return spdlog::level::trace;
    case rocksdb::INFO_LEVEL: return spdlog::level::debug;
    case rocksdb::WARN_LEVEL: return spdlog::level::warn;
    case rocksdb::ERROR_LEVEL: return spdlog::level::err;
    case rocksdb::FATAL_LEVEL: return spdlog::level::critical;
    case rocksdb::HEADER_LEVEL: return spdlog::level::debug;
    default: return spdlog::level::info;
  }
}

// "<file>: dropping <n> bytes; <why>", RocksDB's words for what WAL
// recovery skipped (db_impl_open.cc); 0 for any other line.
uint64_t DroppedBytes(std::string_view line) {
  constexpr std::string_view kWord = ": dropping ";
  const size_t at = line.find(kWord);
  if (at == std::string_view::npos) return 0;
  uint64_t n = 0;
  const char* p = line.data() + at + kWord.size();
  const char* end = line.data() + line.size();
  auto [after, ec] = std::from_chars(p, end, n);
  if (ec != std::errc() ||
      std::string_view(after, static_cast<size_t>(end - after)).rfind(" bytes", 0) != 0)
    return 0;
  return n;
}

// RocksDB's checkpoint disables file deletions inside its own disabling
// (nested, counted) and warns of the nesting on the way in and out: "File
// Deletions Disabled, but already disabled. Counter: 2" and "File
// Deletions Enable, but not really enabled. Counter: 1". Nothing is wrong,
// but every hot backup logged both as warnings (found by session 41):
// debug instead.
spdlog::level::level_enum LevelOf(rocksdb::InfoLogLevel level, const char* format) {
  if (level == rocksdb::WARN_LEVEL && std::strstr(format, "File Deletions") != nullptr) {
    return spdlog::level::debug;
  }
  return LevelOf(level);
}

class SpdlogRocksDbLogger final : public rocksdb::Logger {
 public:
  // RocksDB filters by its own level before formatting; DEBUG lets every
  // line through to the check against spdlog's level below, which can change
  // at run time.
  explicit SpdlogRocksDbLogger(std::shared_ptr<RecoveryReport> report)
      : rocksdb::Logger(rocksdb::DEBUG_LEVEL), report_(std::move(report)) {}

  void Logv(const char* format, va_list ap) override { Logv(rocksdb::INFO_LEVEL, format, ap); }

  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    // A WAL recovery's "dropping" warning is counted whatever spdlog's level.
    const bool count =
        report_ && level == rocksdb::WARN_LEVEL && std::strstr(format, "dropping") != nullptr;
    const auto to = LevelOf(level, format);
    const bool log = spdlog::should_log(to);
    if (!count && !log) return;  // most INFO lines stop here, unformatted
    char stack[512];
    va_list copy;
    va_copy(copy, ap);
    const int n = std::vsnprintf(stack, sizeof stack, format, copy);
    va_end(copy);
    if (n < 0) return;
    std::string long_line;
    std::string_view line(stack, static_cast<size_t>(n));
    if (static_cast<size_t>(n) >= sizeof stack) {
      // The options dump and compaction summaries can be long.
      long_line.assign(static_cast<size_t>(n) + 1, '\0');
      std::vsnprintf(long_line.data(), long_line.size(), format, ap);
      long_line.pop_back();
      line = long_line;
    }
    if (count) report_->wal_dropped_bytes.fetch_add(DroppedBytes(line));
    if (log) spdlog::log(to, "rocksdb: {}", line);
  }

 private:
  const std::shared_ptr<RecoveryReport> report_;
};

}  // namespace

std::shared_ptr<rocksdb::Logger> MakeRocksDbLogger(std::shared_ptr<RecoveryReport> report) {
  return std::make_shared<SpdlogRocksDbLogger>(std::move(report));
}

}  // namespace sidetable::internal
