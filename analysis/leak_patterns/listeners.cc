// listeners-never-removed: listeners accumulating in a collection (docs/leak-patterns.md).
//
// For every reachable object array (the storage of ArrayList, CopyOnWriteArrayList, Vector,
// ArrayDeque, ... or the table of a HashMap/ConcurrentHashMap, whose nodes' keys are looked at):
// count its listener-like elements per class. A class is listener-like when it is defined outside
// the JDK and its name has "$$Lambda" (a lambda or method reference) or its simple name ends with
// Listener, Observer, Callback, Handler or Subscriber. The array matches when one such class has at
// least options.listener_min_count elements in it. O(references of object arrays).
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/leak_patterns/pattern_context.h"
#include "common/stable_class_name.h"

namespace heapwatch::analysis::leak_patterns {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// 1 = listener-like, 2 = not (memoised per class).
bool ListenerLike(const HeapGraph& graph, ClassId cls, std::vector<uint8_t>* cache) {
  if (!cls.valid()) return false;
  uint8_t& state = (*cache)[cls.value];
  if (state == 0) {
    const std::string& name = graph.class_info(cls).name;
    bool yes = false;
    if (!IsJdkClassName(name)) {
      if (name.find("$$Lambda") != std::string::npos) {
        yes = true;
      } else {
        for (std::string_view suffix :
             {"Listener", "Observer", "Callback", "Handler", "Subscriber"}) {
          yes = yes || EndsWith(name, suffix);
        }
      }
    }
    state = yes ? 1 : 2;
  }
  return state == 1;
}

// "com.acme.ViewModel$$Lambda$14/0x0000000801001234" -> "com.acme.ViewModel"; "" when not a
// lambda class.
std::string LambdaHost(std::string_view name) {
  const size_t at = name.find("$$Lambda");
  return at == std::string_view::npos ? std::string() : StableClassName(name.substr(0, at));
}

}  // namespace

Status RecognizeListeners(const PatternContext& c, const LeakPatternOptions& options,
                          std::vector<LeakPatternMatch>* matches) {
  const HeapGraph& graph = c.graph();
  const CsrGraph& g = graph.graph();
  std::vector<uint8_t> listener_cache(graph.class_count(), 0);
  for (uint32_t i = 0; i < graph.object_count(); ++i) {
    const ObjectIndex array(i);
    if (graph.kind(array) != ObjectKind::kObjectArray ||
        graph.array_length(array) < options.listener_min_count || !c.reachable(array)) {
      continue;
    }
    std::map<uint32_t, std::vector<ObjectIndex>> per_class;  // listener class -> listeners
    bool map_nodes = false;
    for (uint64_t e = g.first_edge(array); e < g.first_edge(ObjectIndex(i + 1)); ++e) {
      ObjectIndex element = g.targets[e];
      if (graph.kind(element) != ObjectKind::kInstance) continue;
      ClassId cls = graph.class_of(element);
      if (!ListenerLike(graph, cls, &listener_cache)) {
        // A hash table's node: its key is the listener (HashSet, ConcurrentHashMap.newKeySet).
        const std::string& name = graph.class_info(cls).name;
        if (!IsJdkClassName(name) || name.find("Node") == std::string::npos) continue;
        element = c.Field(element, "key");
        if (!element.valid() || graph.kind(element) != ObjectKind::kInstance) continue;
        cls = graph.class_of(element);
        if (!ListenerLike(graph, cls, &listener_cache)) continue;
        map_nodes = true;
      }
      per_class[cls.value].push_back(element);
    }
    for (const auto& [cls_value, listeners] : per_class) {
      if (listeners.size() < options.listener_min_count) continue;
      const ClassId cls(cls_value);
      const std::string& listener_class = graph.class_info(cls).name;
      LeakPatternMatch match = NewMatch("listeners-never-removed");
      match.objects = listeners.size();
      for (ObjectIndex l : listeners) match.retained_bytes += c.retained(l);
      // The collection: the array's immediate dominator when it is an instance (ArrayList,
      // CopyOnWriteArrayList), for a hash table the map's owner (HashMap -> HashSet).
      ObjectIndex collection = c.tree().immediate_dominator(array);
      if (collection == c.tree().super_root() || graph.kind(collection) != ObjectKind::kInstance) {
        collection = array;
      }
      std::string holder = c.StaticFieldHolding(collection);
      ObjectIndex owner = kNoObject;  // the object holding the collection, when a static holds it
      if (holder.empty() && collection != array) {
        owner = c.tree().immediate_dominator(collection);
        if (owner != c.tree().super_root()) holder = c.StaticFieldHolding(owner);
        if (holder.empty()) owner = kNoObject;
      }
      const std::string where =
          absl::StrCat(c.ObjectName(collection), map_nodes ? " (a hash set or map)" : "",
                       owner.valid() ? absl::StrCat(" of ", c.ObjectName(owner)) : "",
                       holder.empty() ? "" : absl::StrCat(" (", holder, ")"));
      // Who registered them: the class a lambda was declared in, and what each captures.
      const std::string host = LambdaHost(listener_class);
      std::map<std::string, uint64_t> captured;
      std::map<std::string, uint64_t> receivers;  // class of arg$1: a method reference's receiver
      for (size_t k = 0; k < listeners.size(); ++k) {
        const ObjectIndex l = listeners[k];
        for (uint64_t e = g.first_edge(l); e < g.first_edge(ObjectIndex(l.value + 1)); ++e) {
          const ReferenceSlot slot = graph.ResolveReference(l, e);
          if (slot.kind != ReferenceSlot::Kind::kField) continue;
          const std::string field = graph.DescribeSlot(l, slot);
          ++captured[absl::StrCat(c.ClassName(g.targets[e]), " (field ", field, ")")];
          if (!host.empty() && field == "arg$1") ++receivers[c.ClassName(g.targets[e])];
        }
      }
      // A lambda's host class registered it; the object a method reference (this::on) or a
      // capturing lambda was made on is its first captured argument, arg$1. The method it calls
      // is not in the dump (HPROF has no code): docs/leak-patterns.md.
      std::string registrant = listener_class;
      if (!host.empty()) {
        std::string receiver;
        for (const auto& [name, count] : receivers) {
          if (2 * count > listeners.size()) receiver = name;  // most listeners capture one
        }
        registrant =
            absl::StrCat(host, " (lambda",
                         receiver.empty() ? "" : absl::StrCat(", capturing a ", receiver), ")");
      }
      match.culprits.push_back(host.empty() ? absl::StrCat("listener class ", listener_class)
                                            : absl::StrCat("lambda or method reference ",
                                                           listener_class, ", declared in ", host));
      for (const auto& [what, count] : captured) {
        match.culprits.push_back(absl::StrCat("each listener captures a ", what, " (", count,
                                              count == 1 ? " listener)" : " listeners)"));
      }
      match.culprits.push_back(absl::StrCat("collection ", where));
      match.summary = absl::StrFormat(
          "%d listeners of class %s accumulate in %s: listeners registered by %s are never "
          "removed",
          listeners.size(), listener_class, where, registrant);
      HW_ASSIGN_OR_RETURN(match.path, c.PathTo(array));
      match.anchors.push_back(array);
      if (collection != array) match.anchors.push_back(collection);
      if (owner.valid()) match.anchors.push_back(owner);
      matches->push_back(std::move(match));
    }
  }
  return absl::OkStatus();
}

}  // namespace heapwatch::analysis::leak_patterns
