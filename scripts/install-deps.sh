#!/usr/bin/env bash
# Installs the Debian 12 packages sidetable needs, only those missing.
# A no-op (no apt-get at all) when everything is present.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  clang libclang-rt-14-dev          # libFuzzer targets
  librocksdb-dev libzmq3-dev cppzmq-dev librdkafka-dev
  libspdlog-dev libgtest-dev libgmock-dev libbenchmark-dev
  libsimdjson-dev libyaml-cpp-dev libcli11-dev libxxhash-dev libcpp-httplib-dev
  libmsgpack-cxx-dev                # the wire protocol's MessagePack writer
  libsodium-dev                     # HMAC-SHA256 of signed tokens (protocol/token.h)
  rapidjson-dev                     # only bench/codec_bench compares against it
  python3-zmq python3-msgpack
  docker-compose                    # only to validate compose/ (no container engine runs here)
  file dpkg-dev                     # CPack's .deb: dpkg-shlibdeps and file (tests/packaging)
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "installing: ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
