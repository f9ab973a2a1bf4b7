#!/bin/sh
# Formats one man page the way lintian's manpage check does and fails on any warning groff or
# man prints (bad macros, unescaped hyphens used as minus signs are fine, broken fonts are not).
set -eu
page=${1:?usage: lint_man_page.sh PAGE}
[ -r "$page" ] || { echo "lint_man_page: cannot read $page" >&2; exit 1; }
warnings=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$page" 2>&1 >/dev/null)
if [ -n "$warnings" ]; then
  printf '%s: formatting warnings:\n%s\n' "$page" "$warnings"
  exit 1
fi
echo "$page: formats without warnings"
