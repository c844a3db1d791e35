#!/usr/bin/env bash
# The programs some tests drive, from Debian or Ubuntu (run as root: `sudo scripts/install-test-tools.sh`):
# Chromium (the status page in a real browser), promtool and prometheus (the alerting rules and the
# dashboard against a real Prometheus), Go with sprig, sigs.k8s.io/yaml and gojsonschema (the Helm
# chart rendered as Helm does), redis-server and openssl. Without them those tests skip, and
# `npm test` ends by naming them (test/support/tools.ts). helm and a container builder are not here:
# see docs/development.md, "Tools some tests need". Installs only what is missing.
set -euo pipefail

need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
{ command -v promtool && command -v prometheus; } >/dev/null 2>&1 || need+=(prometheus)
command -v go >/dev/null 2>&1 || need+=(golang-go)
[ -d /usr/share/gocode/src/github.com/Masterminds/sprig ] || need+=(golang-github-masterminds-sprig-dev)
[ -d /usr/share/gocode/src/sigs.k8s.io/yaml ] || need+=(golang-k8s-sigs-yaml-dev)
[ -d /usr/share/gocode/src/github.com/xeipuuv/gojsonschema ] || need+=(golang-github-xeipuuv-gojsonschema-dev)
{ command -v redis-server && command -v redis-cli; } >/dev/null 2>&1 || need+=(redis-server)
command -v openssl >/dev/null 2>&1 || need+=(openssl)

if [ "${#need[@]}" -eq 0 ]; then
  echo "test tools: all here"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "test tools missing: ${need[*]}; run as root: sudo $0" >&2
  exit 1
fi
echo "== installing from Debian: ${need[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
