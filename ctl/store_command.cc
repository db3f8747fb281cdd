#include "ctl/store_command.h"

#include "absl/strings/str_format.h"
#include "ctl/output.h"
#include "ctl/rpc.h"
#include "heapwatch/v1/heapwatch.grpc.pb.h"

namespace heapwatch::ctl {
namespace {

std::string Percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "-";
  return absl::StrFormat("%.1f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

int RunStore(const GlobalOptions& global, std::ostream& out, std::ostream& err) {
  RpcClient client(global);
  v1::GetStoreStatsRequest request;
  v1::GetStoreStatsResponse response;
  grpc::Status status = client.Call(&v1::QueryService::Stub::GetStoreStats, request, &response);
  if (!status.ok()) return ServerError(err, global, "GetStoreStats", status);
  if (global.json) return EmitJson(response, out, err);
  // Shares are of retention.max_bytes, the bound of the live data.
  Table table({"KIND", "RECORDS", "BYTES", "OF MAX"}, {1, 2, 3});
  for (const v1::StoreKindUsage& k : response.kinds()) {
    table.AddRow({k.kind(), absl::StrFormat("%d", k.records()),
                  HumanBytes(static_cast<double>(k.bytes())),
                  Percent(k.bytes(), response.max_bytes())});
  }
  out << "store: " << HumanBytes(static_cast<double>(response.used_bytes())) << " of "
      << HumanBytes(static_cast<double>(response.max_bytes())) << " (retention.max_bytes, "
      << Percent(response.used_bytes(), response.max_bytes()) << "), "
      << HumanBytes(static_cast<double>(response.disk_bytes())) << " on disk\n";
  table.Print(out);
  out << "kept raw dumps: " << HumanBytes(static_cast<double>(response.kept_raw_dump_bytes()))
      << " of " << HumanBytes(static_cast<double>(response.max_dump_disk_bytes()))
      << " (escalation.max_dump_disk_bytes)\n";
  return kExitOk;
}

}  // namespace

Subcommand AddStoreCommand(CLI::App& app) {
  CLI::App* store = app.add_subcommand(
      "store",
      "The daemon's store use per kind of data (snapshots, reports, ...) against its limits");
  return {store, [](const GlobalOptions& g, std::ostream& o, std::ostream& e) {
            return RunStore(g, o, e);
          }};
}

}  // namespace heapwatch::ctl
