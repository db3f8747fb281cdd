#include "ctl/from_roots.h"

#include <algorithm>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ctl/command.h"
#include "ctl/output.h"

namespace heapwatch::ctl {
namespace {

using analysis::GcRootKind;
using analysis::HeapGraph;
using analysis::ObjectIndex;
using analysis::RootTrees;

std::string ObjectName(const HeapGraph& g, ObjectIndex v) {
  if (g.kind(v) == analysis::ObjectKind::kClass) {
    const analysis::ClassId c = g.DescribedClass(v);
    return absl::StrFormat("class %s@0x%x", c.valid() ? g.class_info(c).name : "?", g.object_id(v));
  }
  const analysis::ClassId c = g.class_of(v);
  return absl::StrFormat("%s@0x%x", c.valid() ? g.class_info(c).name : "?", g.object_id(v));
}

// "1 object", "3 objects".
std::string Count(uint64_t n, std::string_view what) {
  return absl::StrCat(n, " ", std::string(what), n == 1 ? "" : "s");
}

// `items` sorted by total size, largest first (ties: the search order).
void SortByTotal(const RootTrees& t, std::vector<ObjectIndex>& items) {
  std::stable_sort(items.begin(), items.end(), [&t](ObjectIndex a, ObjectIndex b) {
    return t.total_bytes[a.value] > t.total_bytes[b.value];
  });
}

}  // namespace

std::string RenderRootTrees(const HeapGraph& g, const RootTrees& t,
                            const FromRootsOptions& options) {
  std::ostringstream out;
  uint64_t total = 0;
  for (ObjectIndex r : t.roots) total += t.total_bytes[r.value];
  const size_t recorded = t.roots.size() - t.inferred_roots;
  std::string roots_text =
      g.info().roots_inferred
          ? absl::StrFormat("%d roots inferred: the dump has no GC root records", recorded)
          : absl::StrFormat("%d GC roots", recorded);
  if (t.inferred_roots > 0) {
    absl::StrAppend(
        &roots_text,
        absl::StrFormat(", %d roots inferred for objects no GC root reaches", t.inferred_roots));
  }
  out << absl::StrFormat("Dump from roots (%s): %s; %d objects, %s\n", g.info().format, roots_text,
                         g.object_count(), HumanBytes(static_cast<double>(total)));
  out << absl::StrFormat(
      "Each row: the total size of the object's tree, its descendants, its maximum depth, its "
      "shallow size. Largest first; %s below each root%s.\n\n",
      options.depth < 0 ? std::string("all levels") : Count(options.depth, "level"),
      options.min_size > 0 ? absl::StrFormat(", subtrees under %s summarised",
                                             HumanBytes(static_cast<double>(options.min_size)))
                           : "");

  Table table({"total", "descendants", "max depth", "shallow", "object"}, {0, 1, 2, 3});
  // An entry of the walk: an object at `level` below its root, or (v invalid) a summary line of
  // `count` subtrees under --min-size totalling `bytes`.
  struct Item {
    ObjectIndex v;
    uint32_t level;
    uint64_t count = 0;
    uint64_t bytes = 0;
    uint64_t objects = 0;
  };
  std::vector<Item> stack;
  // Pushes `items` (already sorted) so that the largest pops first, with a summary line after the
  // ones under --min-size.
  auto push_level = [&](const std::vector<ObjectIndex>& items, uint32_t level) {
    Item small{analysis::kNoObject, level};
    std::vector<ObjectIndex> shown;
    for (ObjectIndex v : items) {
      if (t.total_bytes[v.value] < options.min_size) {
        ++small.count;
        small.bytes += t.total_bytes[v.value];
        small.objects += t.descendants[v.value] + 1;
      } else {
        shown.push_back(v);
      }
    }
    if (small.count > 0) stack.push_back(small);
    for (auto it = shown.rbegin(); it != shown.rend(); ++it) stack.push_back({*it, level});
  };
  std::vector<ObjectIndex> roots = t.roots;
  SortByTotal(t, roots);
  std::vector<GcRootKind> kind_of(g.object_count(), GcRootKind::kUnknown);
  for (size_t i = 0; i < t.roots.size(); ++i) kind_of[t.roots[i].value] = t.root_kinds[i];
  push_level(roots, 0);
  std::vector<ObjectIndex> children;
  while (!stack.empty()) {
    const Item item = stack.back();
    stack.pop_back();
    const std::string indent(2 * item.level, ' ');
    if (!item.v.valid()) {
      table.AddRow(
          {HumanBytes(static_cast<double>(item.bytes)), "", "", "",
           absl::StrFormat("%s... %s (%s)", indent,
                           Count(item.count, item.level == 0 ? "smaller root" : "smaller subtree"),
                           Count(item.objects, "object"))});
      continue;
    }
    const uint32_t v = item.v.value;
    std::string name = indent + ObjectName(g, item.v);
    if (item.level == 0) {
      absl::StrAppend(&name, " [", std::string(analysis::GcRootKindName(kind_of[v])), "]");
    }
    table.AddRow({HumanBytes(static_cast<double>(t.total_bytes[v])), absl::StrCat(t.descendants[v]),
                  absl::StrCat(t.max_depth[v]),
                  HumanBytes(static_cast<double>(g.shallow_size(item.v))), name});
    if (options.depth >= 0 && item.level >= static_cast<uint32_t>(options.depth)) continue;
    const auto kids = t.children.successors(item.v);
    if (kids.empty()) continue;
    children.assign(kids.begin(), kids.end());
    SortByTotal(t, children);
    push_level(children, item.level + 1);
  }
  table.Print(out);
  return out.str();
}

int RunFromRoots(const std::string& file, const dumps::ReadOptions& read,
                 const FromRootsOptions& options, std::ostream& out, std::ostream& err) {
  if (options.depth < -1) {
    err << "heapwatchctl analyze: --depth must be -1 (every level) or more\n";
    return kExitUsage;
  }
  auto graph = dumps::ReadHeapDump(file, read);
  if (!graph.ok()) {
    err << "heapwatchctl analyze: " << graph.status().message() << "\n";
    return kExitError;
  }
  auto trees = analysis::ComputeRootTrees(*graph);
  if (!trees.ok()) {
    err << "heapwatchctl analyze: " << file << ": " << trees.status().message() << "\n";
    return kExitError;
  }
  out << RenderRootTrees(*graph, *trees, options);
  return kExitOk;
}

}  // namespace heapwatch::ctl
