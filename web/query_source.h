// Where heapwatchd's web pages get their data: the answers of the gRPC query service
// (heapwatch.v1.QueryService, proto/heapwatch/v1/heapwatch.proto), asked in-process. The daemon
// implements it with the same functions that serve the RPCs (daemon/query_server.h
// QueryServer::query_source), so a page shows exactly what `heapwatchctl` shows; the web module
// never queries the store itself.
//
// Every method returns the status the RPC would return (NotFound for an unknown agent, dump or
// report, InvalidArgument for a malformed request, FailedPrecondition without escalation).
// Thread-safety: implementations must allow concurrent calls (the web server's worker threads).
#ifndef HEAPWATCH_WEB_QUERY_SOURCE_H_
#define HEAPWATCH_WEB_QUERY_SOURCE_H_

#include "common/status.h"
#include "heapwatch/v1/heapwatch.pb.h"

namespace heapwatch::web {

class QuerySource {
 public:
  virtual ~QuerySource() = default;
  virtual Status ListAgents(const v1::ListAgentsRequest& request,
                            v1::ListAgentsResponse* response) = 0;
  virtual Status ListLeaks(const v1::ListLeaksRequest& request,
                           v1::ListLeaksResponse* response) = 0;
  virtual Status GetLiveSet(const v1::GetLiveSetRequest& request,
                            v1::GetLiveSetResponse* response) = 0;
  virtual Status GetClassHistory(const v1::GetClassHistoryRequest& request,
                                 v1::GetClassHistoryResponse* response) = 0;
  virtual Status ListReports(const v1::ListReportsRequest& request,
                             v1::ListReportsResponse* response) = 0;
  virtual Status GetReport(const v1::GetReportRequest& request,
                           v1::GetReportResponse* response) = 0;
  virtual Status DiffExtendedDumps(const v1::DiffExtendedDumpsRequest& request,
                                   v1::DiffExtendedDumpsResponse* response) = 0;
};

}  // namespace heapwatch::web

#endif  // HEAPWATCH_WEB_QUERY_SOURCE_H_
