// Server: the sidetable process's core, minus main().
//
// One frontend thread owns the ZeroMQ ROUTER socket (bound to every
// configured tcp/ipc endpoint): it reads frames, decodes requests, answers
// malformed or oversized ones itself, and hands the rest to a worker chosen
// by (table, PartitionKey), so one partition's requests run in arrival
// order while other partitions run in parallel (and share group commits in
// the engine). Workers reply through an inproc socket that the frontend
// forwards to the client. Every worker queue is bounded: when full, the
// request is answered with ServerBusy (503) at once. A small point read or
// write (sidecar.inline_max_bytes) whose worker has nothing queued or
// executing runs on the frontend itself: it overtakes nothing of its
// partition and saves two thread hand-offs. So does a larger write (an EGT,
// sidecar.inline_alone_max_bytes) when it is the only request in flight:
// nothing waits behind it. In fsync durability a write's
// reply waits for its WAL fsync on one acknowledger thread, shared by every
// write executed meanwhile (durable_acks.cc), not on the thread that ran it.
//
// Admission (sidecar/admission.h) bounds the bytes in flight, in total and
// per connection; every refusal is a ServerBusy the frontend answers itself,
// within milliseconds, never queued behind the work.
//
// Lifecycle: Start() opens the engine and binds everything; Run() serves
// until RequestStop() (async-signal-safe), then answers new requests
// ServerBusy, finishes queued ones until shutdown_grace_ms, answers those
// still queued ServerBusy (never executing them), stops the publisher with
// a bounded wait, and returns within the grace plus a fixed margin
// (sidecar/server_impl.h). If something could not be stopped in time,
// stopped_cleanly() is false and the caller must exit the process without
// destroying the Server (the engine is still in use; acknowledged writes
// are durable and unpublished changes stay in the change log).
//
// Thread safety: RequestStop() from any thread or a signal handler; the
// accessors after Start().
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/kafka/embedded_kafka.h"
#include "engine/engine.h"
#include "sidecar/auth/authenticator.h"
#include "sidecar/auth/policy_store.h"
#include "sidecar/auth/tenant_metrics.h"
#include "sidecar/backup.h"
#include "sidecar/changestream/publisher.h"
#include "sidecar/cluster/cluster.h"
#include "sidecar/cluster/table_incarnations.h"
#include "sidecar/cluster_routing.h"
#include "sidecar/config.h"
#include "sidecar/metrics.h"
#include "sidecar/source_routes.h"
#include "sidecar/watermarks.h"

namespace sidetable::sidecar {

class Server {
 public:
  static Result<std::unique_ptr<Server>> Start(const ServerConfig& config);
  ~Server();

  void Run();
  void RequestStop() { stop_.store(true, std::memory_order_relaxed); }
  // After Run(): false when a worker or the publisher was left running.
  bool stopped_cleanly() const { return stopped_cleanly_; }

  // The endpoints actually bound (tcp port 0 resolved), and the HTTP port (0 = off).
  const std::vector<std::string>& endpoints() const { return endpoints_; }
  int http_port() const { return http_port_; }
  // "host:port" as bound ("" = off): the ready file reports it.
  const std::string& http_address() const { return http_address_; }
  // The REST gateway's "host:port" as bound ("" = off): the ready file's `rest` line.
  const std::string& rest_address() const { return rest_address_; }
  Engine& engine() { return *engine_; }
  Watermarks& watermarks() { return *watermarks_; }
  Metrics& metrics() { return metrics_; }
  auth::TenantMetrics& tenant_metrics() { return tenant_metrics_; }
  // Null when kafka.bootstrap is empty.
  changestream::Publisher* publisher() { return publisher_.get(); }
  // The Kafka bootstrap servers in use ("" when not publishing).
  std::string kafka_bootstrap() const { return publisher_ ? publisher_->bootstrap() : ""; }

  // Null unless cluster.service is set (docs/scale-out.md).
  cluster::Cluster* cluster() { return cluster_.get(); }
  ClusterRouting* routing() { return routing_.get(); }

  class Impl;

 private:
  Server() = default;
  Status StartChangeStream(const ServerConfig& config);
  // After Bind (the advertised endpoint defaults to the first bound one),
  // before the workers start.
  Status StartCluster(const ServerConfig& config);
  // storage.backup_dir, this sidecar's while it runs (sidecar/backup.h).
  BackupDirLock backup_lock_;
  // Destroyed in reverse order: workers, then the publisher, then Kafka, then the engine.
  // The engine's change observer: outlives it.
  std::unique_ptr<SourceRoutes> routes_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Watermarks> watermarks_;
  std::unique_ptr<auth::PolicyStore> policies_;
  std::unique_ptr<auth::Authenticator> authenticator_;  // null: auth.mode off
  std::unique_ptr<kafka::EmbeddedKafka> embedded_kafka_;
  std::unique_ptr<changestream::Publisher> publisher_;
  // Cluster mode: local table id -> cluster incarnation, shared by the
  // publisher (stamps) and the cluster (maps creates).
  std::shared_ptr<cluster::TableIncarnations> table_incarnations_;
  std::unique_ptr<Impl> impl_;
  // Stopped after the workers, before the publisher and the engine.
  std::unique_ptr<cluster::Cluster> cluster_;
  std::unique_ptr<ClusterRouting> routing_;
  // What the HTTP thread reads: set once both above exist, cleared first.
  std::atomic<cluster::Cluster*> cluster_live_{nullptr};
  std::atomic<ClusterRouting*> routing_live_{nullptr};
  Metrics metrics_;
  auth::TenantMetrics tenant_metrics_;
  std::vector<std::string> endpoints_;
  int http_port_ = 0;
  std::string http_address_;
  std::string rest_address_;
  std::atomic<bool> stop_{false};
  bool stopped_cleanly_ = true;
};

}  // namespace sidetable::sidecar
