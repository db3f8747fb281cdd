#!/usr/bin/env bash
# The report page of a crafted dump with hostile class and field names (pages_test.cc writes it) in
# headless Chromium: the DOM the browser builds has no script or img element and no svg beyond the
# page's own; the names are shown as text. Saves a screenshot as OUT_DIR/hostile.png.
# Usage: hostile_page_chromium.sh WEB_TEST_BINARY OUT_DIR
set -euo pipefail
web_test=${1:?usage: $0 WEB_TEST_BINARY OUT_DIR}
out=${2:?}
chromium=${HEAPWATCH_CHROMIUM:-chromium}
E2E_LOG_LINES=20 source "$(dirname "$0")/../e2e/e2e_lib.sh" heapwatch-web-hostile
mkdir -p "$out"
HEAPWATCH_WEB_HOSTILE_PAGE="$tmp/hostile.html" "$web_test" \
  --gtest_filter=WebPagesTest.HostileNamesFromADumpAreShownAsText >"$tmp/web_test.log" 2>&1 ||
  fail "web_test failed"
[[ -s $tmp/hostile.html ]] || fail "web_test wrote no page"
timeout 60 "$chromium" --headless --disable-gpu --no-sandbox --user-data-dir="$tmp/profile" \
  --dump-dom "file://$tmp/hostile.html" >"$tmp/dom.html" 2>"$tmp/chromium.log" || fail "chromium --dump-dom"
grep -q '<h1>' "$tmp/dom.html" || fail "chromium produced no page"
! grep -qi '<script' "$tmp/dom.html" || fail "a script element reached the DOM"
! grep -qi '<img' "$tmp/dom.html" || fail "an img element reached the DOM"
[[ $(grep -o '<svg' "$tmp/dom.html" | wc -l) == $(grep -o '</svg>' "$tmp/dom.html" | wc -l) ]] ||
  fail "unbalanced svg elements"
[[ $(grep -o '<svg' "$tmp/dom.html" | wc -l) == 1 ]] || fail "expected only the treemap's svg"
grep -qF 'Evil&lt;script&gt;alert(' "$tmp/dom.html" || fail "the holder class's name is not shown as text"
grep -qF '&lt;/svg&gt;&lt;script&gt;alert(' "$tmp/dom.html" || fail "the field name is not shown as text"
grep -qF 'Leak&amp;&lt;img src=x onerror=alert(1)&gt;' "$tmp/dom.html" || fail "the leaf class's name is not shown as text"
timeout 60 "$chromium" --headless --disable-gpu --no-sandbox --user-data-dir="$tmp/profile" \
  --hide-scrollbars --window-size=1280,1400 --screenshot="$out/hostile.png" "file://$tmp/hostile.html" \
  >>"$tmp/chromium.log" 2>&1 || fail "chromium --screenshot"
cp "$tmp/hostile.html" "$out/"
ok=1
echo "PASS: hostile names shown as text ($(elapsed) s)"
