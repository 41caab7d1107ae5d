#!/usr/bin/env bash
# Installs Debian's chromium package for the headless-browser test of the simulate HTML
# report (tools/browser-test.sh). Skipped when /usr/bin/chromium is already there, so a
# second run costs nothing. Needs root (CI runs as root) or sudo, and apt.
set -euo pipefail

if [[ -x /usr/bin/chromium ]]; then
	exit 0
fi
if ! command -v apt-get >/dev/null; then
	echo "install-chromium: apt-get is needed (Debian's chromium package)" >&2
	exit 1
fi
sudo=""
if [[ "$(id -u)" != 0 ]]; then
	if ! command -v sudo >/dev/null; then
		echo "install-chromium: run as root or install sudo" >&2
		exit 1
	fi
	sudo="sudo"
fi
echo "installing chromium (apt-get, no recommends)" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
/usr/bin/chromium --version 2>/dev/null
