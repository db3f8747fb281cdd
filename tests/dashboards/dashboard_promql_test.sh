#!/usr/bin/env bash
# Checks the PromQL syntax of every query in the Grafana dashboard with promtool, offline.
#
# Usage: dashboard_promql_test.sh DASHBOARD_JSON
#
# Every target `expr` and annotation `expr` of the dashboard becomes a recording rule in a temporary rules file,
# after substituting Grafana's variables with values of the right shape ($agent and $instance -> .*, $top -> 10,
# $__rate_interval and friends -> 1m); `promtool check rules` then parses every expression. Fails on a parse
# error and when the dashboard yields fewer than 20 expressions (a broken extraction must not pass).
set -euo pipefail
dashboard=${1:?usage: $0 DASHBOARD_JSON}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# JSON strings are valid YAML flow scalars, so @json quotes each expression for YAML.
jq -r '
  [.. | objects | select(has("expr")) | .expr | select(type == "string" and length > 0)]
  | to_entries[]
  | "      - record: dashboard:expr_\(.key)\n        expr: \(.value
        | gsub("\\$__(rate_interval|interval|range)"; "1m")
        | gsub("\\$\\{?(agent|instance)\\}?"; ".*")
        | gsub("\\$\\{?top\\}?"; "10")
        | @json)"' "$dashboard" >"$tmp/body"

count=$(grep -c 'record:' "$tmp/body" || true)
if ((count < 20)); then
  echo "FAIL: only $count expressions found in $dashboard" >&2
  exit 1
fi
if grep -n '\$' "$tmp/body" >&2; then
  echo "FAIL: a Grafana variable above is not substituted; define its test value in $0" >&2
  exit 1
fi
{
  echo "groups:"
  echo "  - name: dashboard"
  echo "    rules:"
  cat "$tmp/body"
} >"$tmp/rules.yml"
promtool check rules "$tmp/rules.yml"
echo "OK: $count dashboard expressions parse"
