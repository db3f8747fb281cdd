#include "ctl/report_commands.h"

#include <algorithm>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ctl/report_render.h"
#include "ctl/rpc.h"

namespace heapwatch::ctl {
namespace {

namespace v1 = ::heapwatch::v1;

bool Finished(v1::ExtendedDumpState state) {
  return state == v1::EXTENDED_DUMP_STATE_DONE || state == v1::EXTENDED_DUMP_STATE_FAILED;
}

// ---- commands ----

struct ReportArgs {
  std::string agent;
  std::string class_name;  // or a leak id
  std::string dump_id;     // --dump: that extended dump's report of the class (not with a leak id)
};

// A leak id as ListLeaks gives it: "L" and 12 lowercase hex digits. An argument of that form is
// taken as a leak id (a class in the default package named like one cannot be asked for by name).
bool IsLeakId(std::string_view s) {
  if (s.size() != 13 || s[0] != 'L') return false;
  for (char c : s.substr(1)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

int RunReport(const ReportArgs& args, const GlobalOptions& global, std::ostream& out,
              std::ostream& err) {
  RpcClient client(global);
  v1::GetReportRequest request;
  request.set_agent(args.agent);
  if (IsLeakId(args.class_name) && args.dump_id.empty()) {
    request.set_leak(args.class_name);
  } else {
    request.set_class_name(args.class_name);
  }
  request.set_dump_id(args.dump_id);
  v1::GetReportResponse response;
  grpc::Status status = client.Call(&v1::QueryService::Stub::GetReport, request, &response);
  if (!status.ok()) return ServerError(err, global, "GetReport", status);
  if (global.json) return EmitJson(response, out, err);
  out << RenderReport(response.report());
  return kExitOk;
}

struct ReportsArgs {
  std::string agent;
};

int RunReports(const ReportsArgs& args, const GlobalOptions& global, std::ostream& out,
               std::ostream& err) {
  RpcClient client(global);
  v1::ListReportsRequest request;
  request.set_agent(args.agent);
  v1::ListReportsResponse response;
  grpc::Status status = client.Call(&v1::QueryService::Stub::ListReports, request, &response);
  if (!status.ok()) return ServerError(err, global, "ListReports", status);
  if (global.json) return EmitJson(response, out, err);
  out << RenderReportList(response);
  return kExitOk;
}

struct DumpArgs {
  std::string agent;
  bool wait = false;
  std::string timeout = "10m";
};

int RunDump(const DumpArgs& args, const GlobalOptions& global, std::ostream& out,
            std::ostream& err) {
  absl::Duration timeout;
  if (!absl::ParseDuration(args.timeout, &timeout) || timeout <= absl::ZeroDuration()) {
    err << "heapwatchctl dump: --timeout: invalid duration '" << args.timeout
        << "' (e.g. 90s, 10m)\n";
    return kExitUsage;
  }
  RpcClient client(global);
  v1::TriggerExtendedDumpRequest request;
  request.set_agent(args.agent);
  v1::TriggerExtendedDumpResponse response;
  grpc::Status status =
      client.Call(&v1::QueryService::Stub::TriggerExtendedDump, request, &response);
  if (!status.ok()) return ServerError(err, global, "TriggerExtendedDump", status);
  const v1::ExtendedDump& requested = response.dump();
  if (!args.wait) {
    if (global.json) return EmitJson(response, out, err);
    out << RenderDump(requested);
    out << "follow it with: heapwatchctl reports " << args.agent << "\n";
    return kExitOk;
  }
  const absl::Time start = Clock::Real()->Now();
  grpc::Status list_status;
  auto list = [&](v1::ListReportsResponse* list_response) -> Status {
    v1::ListReportsRequest list_request;
    list_request.set_agent(args.agent);
    list_status = client.Call(&v1::QueryService::Stub::ListReports, list_request, list_response);
    if (!list_status.ok()) return absl::UnavailableError(list_status.error_message());
    return absl::OkStatus();
  };
  auto on_change = [&](const v1::ExtendedDump& d) {
    err << absl::StrFormat("heapwatchctl dump: %s %s (%d s)\n", d.dump_id(),
                           DumpStateName(d.state()),
                           absl::ToInt64Seconds(Clock::Real()->Now() - start));
    err.flush();
  };
  auto sleep = [](absl::Duration d) { std::this_thread::sleep_for(absl::ToChronoMicroseconds(d)); };
  auto final_dump = Finished(requested.state())
                        ? StatusOr<v1::ExtendedDump>(requested)
                        : WaitForDump(requested.dump_id(), timeout, absl::Seconds(1),
                                      *Clock::Real(), sleep, list, on_change);
  if (!final_dump.ok()) {
    if (!list_status.ok()) return ServerError(err, global, "ListReports", list_status);
    err << "heapwatchctl dump: " << final_dump.status().message() << "\n";
    return kExitError;
  }
  if (global.json) {
    v1::TriggerExtendedDumpResponse final_response;
    *final_response.mutable_dump() = *final_dump;
    int code = EmitJson(final_response, out, err);
    if (code != kExitOk) return code;
  } else {
    out << RenderDump(*final_dump);
  }
  if (final_dump->state() != v1::EXTENDED_DUMP_STATE_DONE) {
    err << "heapwatchctl dump: extended dump " << final_dump->dump_id() << " of " << args.agent
        << " failed: " << (final_dump->error().empty() ? "(no reason given)" : final_dump->error())
        << "\n";
    return kExitError;
  }
  return kExitOk;
}

struct DumpDiffArgs {
  std::string agent;
  std::vector<std::string> dumps;
  uint32_t top = 20;
};

int RunDumpDiff(const DumpDiffArgs& args, const GlobalOptions& global, std::ostream& out,
                std::ostream& err) {
  if (args.dumps.size() == 1) {
    err << "heapwatchctl dump-diff: give two dump ids (A B) or none (the last two analysed "
           "dumps)\n";
    return kExitUsage;
  }
  v1::DiffExtendedDumpsRequest request;
  request.set_agent(args.agent);
  if (args.dumps.size() == 2) {
    request.set_from_dump(args.dumps[0]);
    request.set_to_dump(args.dumps[1]);
  }
  request.set_max_classes(args.top);
  request.set_max_owners(args.top);
  RpcClient client(global);
  v1::DiffExtendedDumpsResponse response;
  grpc::Status status = client.Call(&v1::QueryService::Stub::DiffExtendedDumps, request, &response);
  if (!status.ok()) return ServerError(err, global, "DiffExtendedDumps", status);
  if (global.json) return EmitJson(response, out, err);
  out << RenderExtendedDumpDiff(response.diff(), args.top);
  return kExitOk;
}

}  // namespace

StatusOr<v1::ExtendedDump> WaitForDump(
    const std::string& dump_id, absl::Duration timeout, absl::Duration interval, const Clock& clock,
    const std::function<void(absl::Duration)>& sleep, const ListReportsFn& list,
    const std::function<void(const v1::ExtendedDump&)>& on_change) {
  const absl::Time deadline = clock.Now() + timeout;
  bool seen = false;
  v1::ExtendedDumpState last_state = v1::EXTENDED_DUMP_STATE_UNSPECIFIED;
  while (true) {
    v1::ListReportsResponse response;
    HW_RETURN_IF_ERROR(list(&response));
    for (const v1::ExtendedDump& d : response.dumps()) {
      if (d.dump_id() != dump_id) continue;
      if (!seen || d.state() != last_state) {
        if (on_change) on_change(d);
      }
      seen = true;
      last_state = d.state();
      if (Finished(d.state())) return d;
      break;
    }
    absl::Time now = clock.Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(
          seen ? absl::StrFormat("extended dump %s still %s after %s", dump_id,
                                 DumpStateName(last_state), absl::FormatDuration(timeout))
               : absl::StrFormat("extended dump %s did not appear in ListReports within %s",
                                 dump_id, absl::FormatDuration(timeout)));
    }
    sleep(std::min(interval, deadline - now));
  }
}

std::vector<Subcommand> AddReportCommands(CLI::App& app) {
  std::vector<Subcommand> commands;

  auto report_args = std::make_shared<ReportArgs>();
  CLI::App* report = app.add_subcommand(
      "report",
      "Drill-down report of a leak (its id from `leaks`) or of a suspect class, from the newest "
      "extended dump");
  report->add_option("agent", report_args->agent, "Agent id (see `heapwatchctl agents`)")
      ->required();
  report
      ->add_option("class", report_args->class_name,
                   "Leak id (e.g. L1df5ce41a2b4) or class name (e.g. com.example.Cache$Entry)")
      ->required();
  report->add_option(
      "--dump", report_args->dump_id,
      "The class's report from this extended dump (a dump id of `heapwatchctl "
      "reports`), also when a newer dump superseded it; `class` is then a class name");
  commands.push_back(
      {report, [report_args](const GlobalOptions& g, std::ostream& o, std::ostream& e) {
         return RunReport(*report_args, g, o, e);
       }});

  auto reports_args = std::make_shared<ReportsArgs>();
  CLI::App* reports =
      app.add_subcommand("reports", "Extended dumps of an agent, newest first, with their state");
  reports->add_option("agent", reports_args->agent, "Agent id")->required();
  commands.push_back(
      {reports, [reports_args](const GlobalOptions& g, std::ostream& o, std::ostream& e) {
         return RunReports(*reports_args, g, o, e);
       }});

  auto dump_args = std::make_shared<DumpArgs>();
  CLI::App* dump = app.add_subcommand(
      "dump", "Request an extended dump (heap dump + analysis) of a live agent now");
  dump->add_option("agent", dump_args->agent, "Agent id")->required();
  dump->add_flag("--wait", dump_args->wait,
                 "Poll ListReports every second until the dump is done or failed");
  dump->add_option("--timeout", dump_args->timeout,
                   "With --wait: give up after this long (e.g. 90s, 10m); before the subcommand, "
                   "--timeout is each request's deadline")
      ->capture_default_str();
  commands.push_back({dump, [dump_args](const GlobalOptions& g, std::ostream& o, std::ostream& e) {
                        return RunDump(*dump_args, g, o, e);
                      }});

  auto diff_args = std::make_shared<DumpDiffArgs>();
  CLI::App* diff = app.add_subcommand(
      "dump-diff", "Per-class and per-owner difference between two analysed extended dumps");
  diff->add_option("agent", diff_args->agent, "Agent id")->required();
  diff->add_option("dumps", diff_args->dumps,
                   "Older and newer dump id (see `heapwatchctl reports`); default: the last two "
                   "analysed dumps")
      ->expected(0, 2);
  diff->add_option("--top", diff_args->top,
                   "At most this many classes and owners, largest growth first; 0 = all")
      ->capture_default_str();
  commands.push_back({diff, [diff_args](const GlobalOptions& g, std::ostream& o, std::ostream& e) {
                        return RunDumpDiff(*diff_args, g, o, e);
                      }});
  return commands;
}

}  // namespace heapwatch::ctl
