#include "analysis/class_loaders.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"

namespace heapwatch::analysis {
namespace {

// The JDK defines every generated reflection accessor in a loader of its own (one
// DelegatingClassLoader per GeneratedMethodAccessorN); under their stable names they would look
// like one class defined by many loaders.
bool IsOneClassPerLoader(std::string_view loader_class) {
  return loader_class == "jdk.internal.reflect.DelegatingClassLoader" ||
         loader_class == "sun.reflect.DelegatingClassLoader";
}

bool IsPlatformName(std::string_view name) {
  for (std::string_view prefix : {"java.", "javax.", "jdk.", "sun.", "com.sun."}) {
    if (name.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

}  // namespace

ClassLoaderSummary SummarizeClassLoaders(const HeapGraph& graph,
                                         const ClassLoaderOptions& options) {
  ClassLoaderSummary out;
  const std::vector<ClassTotals> totals = ComputeClassTotals(graph);

  // Per loader object: its row. Per class name: the loader objects that define it.
  absl::flat_hash_map<uint32_t, ClassLoaderRow> rows;
  std::map<std::string_view, std::vector<ObjectIndex>> definers;  // ordered: stable output
  for (uint32_t c = 0; c < graph.class_count(); ++c) {
    const ClassInfo& info = graph.class_info(ClassId(c));
    if (info.synthetic || info.instance_kind != ObjectKind::kInstance) continue;
    if (!info.class_loader.valid()) {
      ++out.boot_classes;
      continue;
    }
    ClassLoaderRow& row = rows[info.class_loader.value];
    if (row.classes == 0) {
      row.loader = info.class_loader;
      row.loader_id = graph.object_id(info.class_loader);
      const ClassId loader_class = graph.class_of(info.class_loader);
      row.loader_class = loader_class.valid() ? graph.class_info(loader_class).name : "<unknown>";
    }
    ++row.classes;
    if (c < totals.size()) row.instances += totals[c].instances;
    std::vector<ObjectIndex>& loaders = definers[info.name];
    if (loaders.empty() || loaders.back() != info.class_loader)
      loaders.push_back(info.class_loader);
  }
  out.loader_objects = static_cast<uint32_t>(rows.size());

  // Duplicate names grouped by (loader class, number of loaders).
  std::map<std::pair<std::string, uint32_t>, DuplicateClassGroup> groups;
  std::map<std::pair<std::string, uint32_t>, std::vector<std::string_view>> names;
  for (auto& [name, loaders] : definers) {
    std::sort(loaders.begin(), loaders.end());
    loaders.erase(std::unique(loaders.begin(), loaders.end()), loaders.end());
    if (loaders.size() < 2) continue;
    std::map<std::string_view, uint32_t> by_class;
    for (ObjectIndex l : loaders) ++by_class[rows[l.value].loader_class];
    std::string_view loader_class;
    uint32_t most = 0;
    for (const auto& [cls, n] : by_class) {
      if (n > most) {
        most = n;
        loader_class = cls;
      }
    }
    if (IsOneClassPerLoader(loader_class)) continue;
    ++out.duplicated_class_names;
    const auto key =
        std::make_pair(std::string(loader_class), static_cast<uint32_t>(loaders.size()));
    DuplicateClassGroup& g = groups[key];
    g.loader_class = key.first;
    g.loaders = key.second;
    ++g.class_names;
    names[key].push_back(name);
  }
  for (auto& [key, g] : groups) {
    std::vector<std::string_view>& n = names[key];
    std::stable_sort(n.begin(), n.end(), [](std::string_view a, std::string_view b) {
      return std::make_tuple(IsPlatformName(a), a) < std::make_tuple(IsPlatformName(b), b);
    });
    for (size_t i = 0; i < n.size() && i < options.examples; ++i) g.examples.emplace_back(n[i]);
    out.duplicates.push_back(std::move(g));
  }
  std::sort(out.duplicates.begin(), out.duplicates.end(),
            [](const DuplicateClassGroup& a, const DuplicateClassGroup& b) {
              // Most extra copies first: (loaders - 1) x class names.
              const uint64_t ea = uint64_t{a.loaders - 1} * a.class_names;
              const uint64_t eb = uint64_t{b.loaders - 1} * b.class_names;
              if (ea != eb) return ea > eb;
              if (a.loaders != b.loaders) return a.loaders > b.loaders;
              return a.loader_class < b.loader_class;
            });
  if (out.duplicates.size() > options.max_groups) out.duplicates.resize(options.max_groups);

  out.loaders.reserve(rows.size());
  for (auto& [index, row] : rows) out.loaders.push_back(std::move(row));
  std::sort(out.loaders.begin(), out.loaders.end(),
            [](const ClassLoaderRow& a, const ClassLoaderRow& b) {
              if (a.classes != b.classes) return a.classes > b.classes;
              if (a.instances != b.instances) return a.instances > b.instances;
              return a.loader_id < b.loader_id;
            });
  if (out.loaders.size() > options.max_loaders) out.loaders.resize(options.max_loaders);
  return out;
}

}  // namespace heapwatch::analysis
