#!/usr/bin/env bash
# Make Debian's headless Chromium available for the browser test (tests/browser). Idempotent: does nothing when a
# chromium is already on PATH (or CHROMIUM_BIN points at one). Installs with apt-get only when it can (root, or
# passwordless sudo); otherwise it prints why and returns 0, and the browser test skips with that reason (a
# failure in CI, where LAKE_ORCH_REQUIRE_SHARED=1). Source it or run it: `bash scripts/ensure-chromium.sh`.

_ensure_chromium() {
  local have
  for have in "${CHROMIUM_BIN:-}" chromium chromium-browser; do
    if [ -n "$have" ] && command -v "$have" >/dev/null 2>&1; then
      return 0
    fi
  done
  local SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
      SUDO="sudo -n"
    else
      echo "note: chromium is not installed and this user cannot apt-get install it (not root, no sudo);" \
           "the browser test will skip. Install it with: apt-get install -y chromium" >&2
      return 0
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "note: chromium is not installed and there is no apt-get here; the browser test will skip." >&2
    return 0
  fi
  echo "Installing Debian's chromium for the browser test (apt-get, first run only)" >&2
  # chromium-sandbox: lets a non-root user run it sandboxed; fonts-liberation: metric-compatible Arial/Helvetica
  # so a screenshot shows real text, not boxes.
  $SUDO apt-get update -q >/dev/null 2>&1 || true
  if ! DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
       chromium chromium-sandbox fonts-liberation >/dev/null 2>&1; then
    echo "note: 'apt-get install chromium' failed; the browser test will skip (re-run it by hand to see why)." >&2
  fi
  return 0
}

_ensure_chromium
