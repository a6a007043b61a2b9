# Every third-party library comes from Debian's packages (scripts/install-deps.sh).
# Nothing is downloaded at build time.
find_package(Threads REQUIRED)
find_package(RocksDB REQUIRED CONFIG)
find_package(spdlog REQUIRED CONFIG)
find_package(PkgConfig REQUIRED)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
find_package(cppzmq REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(CLI11 REQUIRED)
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
pkg_check_modules(RDKAFKA REQUIRED IMPORTED_TARGET rdkafka)
# HMAC-SHA256 and base64url for signed tokens (protocol/token.h).
pkg_check_modules(SODIUM REQUIRED IMPORTED_TARGET libsodium)
find_package(simdjson REQUIRED CONFIG)
# msgpack-cxx is header-only; its CMake target also pulls in Boost's headers.
find_package(msgpack REQUIRED CONFIG)
