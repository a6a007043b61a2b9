// A Kafka stand-in for the deployment smoke runs (smoke_cluster.py):
// librdkafka's mock cluster with three brokers, in its own process, with the
// topics named on the command line created first (the mock has no
// CreateTopics API and would auto-create them with 4 partitions).
//
//   deploy_kafka_mock TOPIC PARTITIONS [TOPIC PARTITIONS ...]
//
// Prints the brokers' bootstrap addresses on one line, then runs until its
// standard input closes.
#include <iostream>
#include <string>

#include "common/kafka/embedded_kafka.h"

int main(int argc, char** argv) {
  auto kafka = sidetable::kafka::EmbeddedKafka::Start(3);
  if (!kafka.ok()) {
    std::cerr << "deploy_kafka_mock: " << kafka.status().ToString() << "\n";
    return 1;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    auto created = (*kafka)->CreateTopic(argv[i], std::stoi(argv[i + 1]));
    if (!created.ok()) {
      std::cerr << "deploy_kafka_mock: " << created.ToString() << "\n";
      return 1;
    }
  }
  std::cout << (*kafka)->bootstraps() << std::endl;
  for (std::string line; std::getline(std::cin, line);) {
  }
  return 0;
}
