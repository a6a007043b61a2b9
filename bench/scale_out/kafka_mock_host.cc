// sidetable-kafka-mock: librdkafka's mock cluster in a process of its own,
// for benches whose sidecars come and go (bench/scale_out/run.py kills
// them; the cluster must outlive them). Writes the bootstrap list to
// --bootstrap-file, then waits for SIGTERM/SIGINT. Development only: the
// mock keeps about 5 MiB per partition (common/kafka/embedded_kafka.h).
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "common/kafka/embedded_kafka.h"

int main(int argc, char** argv) {
  CLI::App app{"librdkafka's mock Kafka cluster as a process (benches only)"};
  int brokers = 3;
  std::string file;
  app.add_option("--brokers", brokers, "mock brokers")->capture_default_str();
  app.add_option("--bootstrap-file", file, "where to write host:port,...")->required();
  CLI11_PARSE(app, argc, argv);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before the mock's threads start
  auto kafka = sidetable::kafka::EmbeddedKafka::Start(brokers);
  if (!kafka.ok()) {
    std::cerr << kafka.status().ToString() << "\n";
    return 1;
  }
  {
    std::ofstream out(file + ".tmp", std::ios::trunc);
    out << (*kafka)->bootstraps() << "\n";
  }
  std::rename((file + ".tmp").c_str(), file.c_str());
  int sig = 0;
  sigwait(&set, &sig);
  return 0;
}
