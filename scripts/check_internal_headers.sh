#!/usr/bin/env bash
# Fails when a file includes another module's internal header. Each rule: an internal header
# pattern and the folders allowed to include it (the module itself and its own tests).
#   analysis/: *_internal.h and id_index.h are internal; producers use analysis/heap_graph_builder.h.
#   collectors/dumps/: public are heap_dump_reader.h and hprof/hprof_reader.h; every other header is internal.
# Usage: scripts/check_internal_headers.sh [REPO_ROOT]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
status=0
# check HEADER_REGEX PUBLIC_REGEX ALLOWED_PREFIX...: includes matching HEADER_REGEX but not PUBLIC_REGEX are
# allowed only in files under one of the prefixes.
check() {
  local header=$1 public=$2
  shift 2
  local allowed=("$@")
  while IFS=: read -r file line text; do
    if [[ -n $public ]] && grep -qE "\"($public)\"" <<<"$text"; then continue; fi
    local ok=0
    for prefix in "${allowed[@]}"; do
      [[ $file == "$prefix"* ]] && ok=1
    done
    if ((ok == 0)); then
      echo "check_internal_headers: $file:$line: $text: an internal header of another module" >&2
      status=1
    fi
  done < <(grep -rnE --include='*.cc' --include='*.h' "^#include \"($header)\"" \
             analysis bench collectors common ctl daemon diff proto storage tests 2>/dev/null || true)
}
check 'analysis/[^"]*_internal\.h|analysis/id_index\.h' '' analysis/ tests/analysis/
check 'collectors/dumps/[^"]*\.h' 'collectors/dumps/heap_dump_reader\.h|collectors/dumps/hprof/hprof_reader\.h' \
  collectors/dumps/ tests/collectors/dumps/
if ((status == 0)); then echo "check_internal_headers: OK"; fi
exit $status
