#include "ctl/collect_command.h"

#include <algorithm>
#include <memory>
#include <string>

#include "absl/strings/str_format.h"
#include "ctl/output.h"
#include "ctl/rpc.h"
#include "heapwatch/v1/heapwatch.grpc.pb.h"
#include "proto/time_util.h"

namespace heapwatch::ctl {
namespace {

struct CollectArgs {
  std::string agent;
  std::string mode = "live";
};

int RunCollect(const CollectArgs& args, GlobalOptions global, std::ostream& out,
               std::ostream& err) {
  v1::CollectHistogramRequest request;
  request.set_agent(args.agent);
  request.set_mode(args.mode == "all" ? v1::HISTOGRAM_MODE_ALL : v1::HISTOGRAM_MODE_LIVE);
  global.timeout = std::max(global.timeout, absl::Minutes(1));
  RpcClient client(global);
  v1::CollectHistogramResponse response;
  grpc::Status status = client.Call(&v1::QueryService::Stub::CollectHistogram, request, &response);
  if (!status.ok()) return ServerError(err, global, "CollectHistogram", status);
  if (global.json) return EmitJson(response, out, err);
  const char* mode = response.mode() == v1::HISTOGRAM_MODE_LIVE           ? "live"
                     : response.mode() == v1::HISTOGRAM_MODE_ALL          ? "all"
                     : response.mode() == v1::HISTOGRAM_MODE_ALL_AFTER_GC ? "all_after_gc"
                                                                          : "unknown";
  const absl::Duration pause = proto::FromDuration(response.pause()).value_or(absl::ZeroDuration());
  const absl::Time time = proto::FromTimestamp(response.time()).value_or(absl::InfinitePast());
  out << absl::StrFormat(
      "stored a %s histogram of %s taken at %s: paused the JVM %.3fs, %d classes, "
      "%d instances, %s\n",
      mode, args.agent, absl::FormatTime(absl::RFC3339_sec, time, absl::UTCTimeZone()),
      absl::ToDoubleSeconds(pause), response.classes(), response.total_instances(),
      HumanBytes(static_cast<double>(response.total_bytes())));
  return kExitOk;
}

}  // namespace

Subcommand AddCollectCommand(CLI::App& app) {
  auto args = std::make_shared<CollectArgs>();
  CLI::App* collect = app.add_subcommand(
      "collect", "Take a class histogram of an agent now (pauses the JVM; admin role)");
  collect->add_option("agent", args->agent, "Agent id (see `heapwatchctl agents`)")->required();
  collect->add_option("--mode", args->mode, "live (forces a full GC first) or all (no GC)")
      ->check(CLI::IsMember({"live", "all"}));
  return {collect, [args](const GlobalOptions& g, std::ostream& o, std::ostream& e) {
            return RunCollect(*args, g, o, e);
          }};
}

}  // namespace heapwatch::ctl
