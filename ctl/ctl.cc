#include "ctl/ctl.h"

#include <iostream>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "ctl/agent_command.h"
#include "ctl/analyze_command.h"
#include "ctl/collect_command.h"
#include "ctl/command.h"
#include "ctl/query_commands.h"
#include "ctl/report_commands.h"
#include "ctl/store_command.h"
#include "ctl/tls_options.h"
#include "ctl/token_file.h"
#include "ctl/trend_command.h"

namespace heapwatch::ctl {

int RunCtl(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"heapwatchctl: query heapwatchd (JVM leak suspects, agents, class history, diffs)",
               "heapwatchctl"};
  app.require_subcommand(1);
  app.fallthrough();  // global options may also follow the subcommand: `suspects --json`
  GlobalOptions global;
  std::string timeout = "10s";
  app.add_option("--server", global.server, "heapwatchd gRPC address host:port")
      ->capture_default_str();
  app.add_flag("--json", global.json, "Machine-readable JSON output");
  app.add_option("--timeout", timeout, "Deadline of each request, e.g. 10s")->capture_default_str();
  app.add_option("--token-file", global.token_file,
                 "File whose first line is the API secret, sent as 'authorization: Bearer SECRET' "
                 "(default: $HEAPWATCH_TOKEN_FILE)");
  // TLS (ctl/tls_options.h, docs/security.md).
  app.add_option("--tls-ca", global.tls_ca_file,
                 "PEM CA certificates that verify heapwatchd's certificate; turns TLS on "
                 "(default: $HEAPWATCH_TLS_CA)");
  app.add_option("--tls-cert", global.tls_cert_file,
                 "PEM client certificate for mutual TLS; needs --tls-key (default: "
                 "$HEAPWATCH_TLS_CERT)");
  app.add_option("--tls-key", global.tls_key_file,
                 "PEM private key of --tls-cert (default: $HEAPWATCH_TLS_KEY)");
  app.add_option("--tls-server-name", global.tls_server_name,
                 "Name the server certificate must carry, instead of --server's host");

  // Subcommands. Others (e.g. `analyze`) are added here with their own Add*Command function.
  std::vector<Subcommand> commands = AddQueryCommands(app);
  commands.push_back(AddAnalyzeCommand(app));
  commands.push_back(AddTrendCommand(app));
  for (Subcommand& c : AddReportCommands(app)) commands.push_back(std::move(c));
  commands.push_back(AddStoreCommand(app));
  commands.push_back(AddAgentCommand(app));
  commands.push_back(AddCollectCommand(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e, out, err);
    return code == 0 ? kExitOk : kExitUsage;
  }
  absl::Duration d;
  if (!absl::ParseDuration(timeout, &d) || d <= absl::ZeroDuration()) {
    err << "heapwatchctl: --timeout: invalid duration '" << timeout << "'\n";
    return kExitUsage;
  }
  global.timeout = d;
  if (Status s = LoadToken(&global); !s.ok()) {
    err << "heapwatchctl: " << s.message() << "\n";
    return kExitError;
  }
  if (Status s = LoadTls(&global); !s.ok()) {
    err << "heapwatchctl: " << s.message() << "\n";
    return kExitError;
  }
  global.now = absl::Now();
  for (const Subcommand& c : commands) {
    if (c.app->parsed()) return c.run(global, out, err);
  }
  err << "heapwatchctl: no subcommand given (see --help)\n";
  return kExitUsage;
}

int CtlMain(int argc, char** argv) { return RunCtl(argc, argv, std::cout, std::cerr); }

}  // namespace heapwatch::ctl
