#include "daemon/agent_table.h"

namespace heapwatch::daemon {

void AgentTable::Put(AgentStatus status) {
  std::lock_guard<std::mutex> lock(mu_);
  AgentId id = status.info.id;
  agents_.insert_or_assign(std::move(id), std::move(status));
}

bool AgentTable::Remove(const AgentId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  return agents_.erase(id) > 0;
}

bool AgentTable::Update(const AgentId& id, const std::function<void(AgentStatus&)>& update) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = agents_.find(id);
  if (it == agents_.end()) return false;
  update(it->second);
  return true;
}

std::optional<AgentStatus> AgentTable::Get(const AgentId& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = agents_.find(id);
  if (it == agents_.end()) return std::nullopt;
  return it->second;
}

std::vector<AgentStatus> AgentTable::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<AgentStatus> out;
  out.reserve(agents_.size());
  for (const auto& [id, s] : agents_) out.push_back(s);
  return out;
}

size_t AgentTable::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return agents_.size();
}

}  // namespace heapwatch::daemon
