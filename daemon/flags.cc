#include "daemon/flags.h"

#include <string>

#include "CLI/CLI.hpp"

namespace heapwatch::daemon {

CommandLine ParseCommandLine(int argc, const char* const* argv, std::ostream& out,
                             std::ostream& err) {
  CommandLine result;
  const Config defaults;
  CLI::App app{
      "heapwatchd: watches the local JVMs, collects class histograms periodically, stores them in "
      "LMDB, "
      "flags classes that keep growing (leak suspects), and serves the results over gRPC and "
      "Prometheus "
      "/metrics.",
      "heapwatchd"};
  app.get_formatter()->column_width(34);

  std::string config_file, data_dir, grpc_listen, metrics_listen, grpc_port_file, metrics_port_file;
  std::string interval, log_level;
  int concurrency = 0, top_classes = 0;
  app.add_option("--config", config_file, "YAML configuration file (see docs/configuration.md)");
  app.add_option(
      "--data-dir", data_dir,
      "Directory of the LMDB store, created if missing (default: " + defaults.data_dir + ")");
  app.add_option("--grpc-listen", grpc_listen,
                 "host:port of the gRPC query service; port 0 picks a free port (default: " +
                     defaults.grpc_listen + ")");
  app.add_option(
      "--metrics-listen", metrics_listen,
      "host:port of the Prometheus /metrics endpoint; port 0 picks a free port (default: " +
          defaults.metrics_listen + ")");
  app.add_option("--grpc-port-file", grpc_port_file, "Write the bound gRPC port to this file");
  app.add_option("--metrics-port-file", metrics_port_file,
                 "Write the bound metrics port to this file");
  std::string web_listen;
  app.add_option("--web-listen", web_listen,
                 "host:port of the web pages; default: on the metrics listener (see docs/web.md)");
  app.add_option("--interval", interval,
                 "Time between two histograms of one agent, e.g. 30s, 1m, 1h30m (default: " +
                     FormatDurationText(defaults.collection.interval) + ")");
  app.add_option("--concurrency", concurrency,
                 "Collections running at once (default: " +
                     std::to_string(defaults.collection.concurrency) + ")");
  app.add_option("--top-classes", top_classes,
                 "Classes per agent exported to Prometheus besides suspects (default: " +
                     std::to_string(defaults.exporter.top_classes) + ")");
  app.add_option(
      "--log-level", log_level,
      "trace, debug, info, warn, error, critical or off (default: " + defaults.log_level + ")");
  std::string auth_tokens;
  app.add_option("--auth-tokens", auth_tokens,
                 "Tokens file of the gRPC API's credentials (ROLE NAME SHA256HEX per line, see "
                 "docs/security.md); required to listen on a non-loopback address");
  // TLS of the gRPC query listener (auth/tls.h, docs/security.md).
  std::string tls_cert, tls_key, tls_client_ca;
  app.add_option("--tls-cert", tls_cert,
                 "PEM certificate (then intermediates) of the gRPC listener: serve TLS (YAML "
                 "tls.cert_file; needs --tls-key)");
  app.add_option("--tls-key", tls_key,
                 "PEM private key of --tls-cert, unencrypted (YAML tls.key_file)");
  app.add_option("--tls-client-ca", tls_client_ca,
                 "PEM CA certificates of client certificates: request and verify them (mutual "
                 "TLS; YAML tls.client_ca_file; roles in auth.client_certificates)");
  std::string agent_listen;
  app.add_option("--agent-listen", agent_listen,
                 "HOST:PORT or unix:PATH of the agent gateway for in-process JVM agents "
                 "(agents.listen, see docs/agents.md); default: off");
  app.add_flag("--print-config", result.print_config,
               "Print the effective configuration as YAML and exit");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e, out, err);
    result.exit_code = code == 0 ? 0 : 2;
    return result;
  }
  auto usage_error = [&](const std::string& message) {
    err << "heapwatchd: " << message << "\n";
    result.exit_code = 2;
    return result;
  };

  Config config;
  if (!config_file.empty()) {
    auto loaded = LoadConfigFile(config_file, config);
    if (!loaded.ok()) return usage_error(std::string(loaded.status().message()));
    config = *std::move(loaded);
  }
  if (app.count("--data-dir")) config.data_dir = data_dir;
  if (app.count("--grpc-listen")) config.grpc_listen = grpc_listen;
  if (app.count("--metrics-listen")) config.metrics_listen = metrics_listen;
  if (app.count("--grpc-port-file")) config.grpc_port_file = grpc_port_file;
  if (app.count("--metrics-port-file")) config.metrics_port_file = metrics_port_file;
  if (app.count("--log-level")) config.log_level = log_level;
  if (app.count("--web-listen")) config.web.listen = web_listen;
  if (app.count("--concurrency")) config.collection.concurrency = concurrency;
  if (app.count("--top-classes")) config.exporter.top_classes = top_classes;
  if (app.count("--auth-tokens")) config.auth.tokens_file = auth_tokens;
  if (app.count("--tls-cert")) config.tls.cert_file = tls_cert;
  if (app.count("--tls-key")) config.tls.key_file = tls_key;
  if (app.count("--tls-client-ca")) config.tls.client_ca_file = tls_client_ca;
  if (app.count("--agent-listen")) config.agents.listen = agent_listen;
  if (app.count("--interval")) {
    auto d = ParseDurationText(interval);
    if (!d.ok()) return usage_error("--interval: " + std::string(d.status().message()));
    config.collection.interval = *d;
  }
  Status valid = ValidateConfig(config);
  if (!valid.ok()) return usage_error(std::string(valid.message()));
  result.config = std::move(config);
  return result;
}

}  // namespace heapwatch::daemon
