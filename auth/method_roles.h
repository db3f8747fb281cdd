// The one table of which role each RPC of heapwatchd's gRPC services needs (docs/security.md).
// tests/auth checks that every method of heapwatch.v1.QueryService (from its descriptor) has an
// entry, so adding an RPC without deciding its role fails the build's tests; an RPC missing from
// the table is refused at run time (RefusalReason::kUnknownMethod).
//
// Thread-safety: immutable data.
#ifndef HEAPWATCH_AUTH_METHOD_ROLES_H_
#define HEAPWATCH_AUTH_METHOD_ROLES_H_

#include <optional>
#include <span>
#include <string_view>

#include "auth/tokens.h"

namespace heapwatch::auth {

struct MethodAccess {
  // gRPC's full method name, "/package.Service/Method".
  std::string_view method;
  // Callable without a credential (health checking, reflection: they reveal no data).
  bool is_public = false;
  // The role required when not public (RoleSatisfies).
  Role role = Role::kAdmin;
};

// heapwatchd's query listener: heapwatch.v1.QueryService (read-only methods need kRead,
// TriggerExtendedDump kAdmin), grpc.health.v1.Health and server reflection (public).
std::span<const MethodAccess> QueryListenerAccessTable();

// heapwatchd's agent listener (agents.listen): heapwatch.agent.v1.AgentGateway, every method kAgent.
std::span<const MethodAccess> AgentListenerAccessTable();

// The entry of `full_method` in `table`, or nullopt. O(table size).
std::optional<MethodAccess> FindMethodAccess(std::span<const MethodAccess> table,
                                             std::string_view full_method);

}  // namespace heapwatch::auth

#endif  // HEAPWATCH_AUTH_METHOD_ROLES_H_
