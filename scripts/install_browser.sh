#!/usr/bin/env bash
# Debian's Chromium for the Playwright browser tests (Playwright's own browser download needs
# general network access, which these machines lack). Skips quietly where it cannot install;
# the browser tests then skip with a clear reason.
set -uo pipefail
if command -v chromium >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "note: could not install chromium; browser tests will be skipped"
else
  echo "note: chromium not installed and no root/apt-get; browser tests will be skipped"
fi
exit 0
