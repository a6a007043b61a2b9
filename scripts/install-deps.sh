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

# Node.js and npm for the @azure/data-tables suite (tests/rest_sdk) and bench/compare's
# Azurite. Checked by command, not by package: a machine with another Node (e.g.
# NodeSource's nodejs, which bundles npm and conflicts with Debian's npm package) is left
# alone. On a fresh Debian 12 this installs bookworm's nodejs 18 and npm 9; the suite runs
# on them (tests/rest_sdk/README.md, "Node versions").
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "installing: ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
