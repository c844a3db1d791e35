#!/usr/bin/env bash
# Copies the alerting rules and the Grafana dashboard from ops/ into the chart, which can only embed
# files inside its own folder (.Files.Get). Run it after changing either file in ops/, and before
# `helm package`. test/deploy checks that the chart's copies equal ops/.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p helm/sluice/files
copy() {
  if [ -f "$1" ]; then
    cp "$1" "$2"
    echo "copied $1 -> $2"
  else
    echo "missing $1: $2 left as it is" >&2
  fi
}
copy ops/prometheus/sluice-alerts.yaml helm/sluice/files/sluice-alerts.yaml
copy ops/grafana/sluice-dashboard.json helm/sluice/files/sluice-dashboard.json
