#include "auth/method_roles.h"

namespace heapwatch::auth {
namespace {

constexpr MethodAccess kQueryListener[] = {
    // heapwatch.v1.QueryService (proto/heapwatch/v1/heapwatch.proto)
    {"/heapwatch.v1.QueryService/ListAgents", false, Role::kRead},
    {"/heapwatch.v1.QueryService/ListSuspects", false, Role::kRead},
    {"/heapwatch.v1.QueryService/ListLeaks", false, Role::kRead},
    {"/heapwatch.v1.QueryService/ExplainSuspect", false, Role::kRead},
    {"/heapwatch.v1.QueryService/GetClassHistory", false, Role::kRead},
    {"/heapwatch.v1.QueryService/DiffSnapshots", false, Role::kRead},
    {"/heapwatch.v1.QueryService/GetReport", false, Role::kRead},
    {"/heapwatch.v1.QueryService/ListReports", false, Role::kRead},
    // Pauses the JVM for the dump and writes its heap (with its secrets) to disk.
    {"/heapwatch.v1.QueryService/TriggerExtendedDump", false, Role::kAdmin},
    {"/heapwatch.v1.QueryService/DiffExtendedDumps", false, Role::kRead},
    {"/heapwatch.v1.QueryService/GetLiveSet", false, Role::kRead},
    {"/heapwatch.v1.QueryService/GetStoreStats", false, Role::kRead},
    // Pauses the JVM for a class histogram (it counts against the pause budget).
    {"/heapwatch.v1.QueryService/CollectHistogram", false, Role::kAdmin},
    // Standard services on the same listener: they reveal whether the daemon serves and the public
    // schema, no data.
    {"/grpc.health.v1.Health/Check", true, Role::kRead},
    {"/grpc.health.v1.Health/Watch", true, Role::kRead},
    {"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", true, Role::kRead},
};

// heapwatch.agent.v1.AgentGateway (proto/heapwatch/agent/v1/agent.proto): on its own listener,
// every method needs a token of role `agent` (read and admin tokens do not satisfy it).
constexpr MethodAccess kAgentListener[] = {
    {"/heapwatch.agent.v1.AgentGateway/Connect", false, Role::kAgent},
    {"/heapwatch.agent.v1.AgentGateway/UploadDump", false, Role::kAgent},
    {"/heapwatch.agent.v1.AgentGateway/GetUploadStatus", false, Role::kAgent},
};

}  // namespace

std::span<const MethodAccess> QueryListenerAccessTable() { return kQueryListener; }

std::span<const MethodAccess> AgentListenerAccessTable() { return kAgentListener; }

std::optional<MethodAccess> FindMethodAccess(std::span<const MethodAccess> table,
                                             std::string_view full_method) {
  for (const MethodAccess& m : table) {
    if (m.method == full_method) return m;
  }
  return std::nullopt;
}

}  // namespace heapwatch::auth
