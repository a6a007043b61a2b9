// LoadConfigText: a configuration given as YAML text, loaded the way the
// server loads its file (through a scratch file), for the config suites.
#pragma once

#include <fstream>
#include <string>

#include "sidecar/config.h"
#include "testing/temp_dir.h"

namespace sidetable::sidecar {

inline Status LoadConfigText(const std::string& text, ServerConfig* c) {
  testing::TempDir dir;
  const std::string path = dir.Sub("c.yaml");
  std::ofstream(path) << text;
  return LoadConfigFile(path, c);
}

}  // namespace sidetable::sidecar
