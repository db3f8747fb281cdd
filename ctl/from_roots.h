// `heapwatchctl analyze FILE --from-roots [--depth N] [--min-size BYTES]`: HeapRoots' "dump from
// roots" (seed 000) of a heap dump of any format dumps::ReadHeapDump reads (HPROF, IBM PHD, IBM
// text). The trees and their figures come from analysis/root_trees.h; this file only prints them.
//
// Output (text; sizes human-readable as ctl/output.h HumanBytes, objects named "Class@0xADDRESS",
// class objects "class Class@0xADDRESS"):
//   a header with the dump's format, the number of roots (GC roots and inferred ones), objects and
//   bytes; then one table row per printed object: its subtree's total size, its descendants, its
//   maximum depth, its shallow size and the object, indented two spaces per level below its root,
//   roots marked with their GC root kind ("[PURE_ROOT]", "[STICKY_CLASS]", ...). Roots and the
//   children of each object are listed by total size, largest first (HeapRoots prints them in
//   search order; the figures are the same). --depth N prints N levels below each root (0: roots
//   only; -1: all); --min-size BYTES leaves out subtrees whose total size is smaller, with one line
//   "... K smaller" per level saying how many and how big they are together.
//
// Thread-safety: the functions are reentrant.
#ifndef HEAPWATCH_CTL_FROM_ROOTS_H_
#define HEAPWATCH_CTL_FROM_ROOTS_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "analysis/heap_graph.h"
#include "analysis/root_trees.h"
#include "collectors/dumps/heap_dump_reader.h"

namespace heapwatch::ctl {

struct FromRootsOptions {
  int depth = 3;          // levels printed below each root; -1 = every level
  uint64_t min_size = 0;  // bytes: subtrees with a smaller total are summarised
};

// The text described in the file comment. O(printed rows x log(children)) after the trees; the tree
// walk is iterative.
std::string RenderRootTrees(const analysis::HeapGraph& graph, const analysis::RootTrees& trees,
                            const FromRootsOptions& options);

// Reads `file` with dumps::ReadHeapDump(file, read), computes the trees and prints them to `out`.
// Returns an exit code (ctl/command.h): kExitOk, kExitError (the file cannot be read; the message
// on `err` names the file) or kExitUsage (depth below -1).
int RunFromRoots(const std::string& file, const dumps::ReadOptions& read,
                 const FromRootsOptions& options, std::ostream& out, std::ostream& err);

}  // namespace heapwatch::ctl

#endif  // HEAPWATCH_CTL_FROM_ROOTS_H_
