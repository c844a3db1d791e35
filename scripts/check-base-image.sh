#!/bin/sh
# Checks the Dockerfile's pinned base image against the registry: the digest exists under that name,
# and whether the tag still points at it. It needs a registry, so it runs where one is reachable (a
# release pipeline, a workstation), with crane (github.com/google/go-containerregistry) or, failing
# that, `docker buildx imagetools`. Exit 0: the pin is the tag's current digest; 1: the pin does
# not exist (a typo, or a digest of another image); 2: it exists but the tag has moved on (refresh
# it: docs/deploy.md "The image"); 3: no tool or no registry, nothing checked.
#   scripts/check-base-image.sh [Dockerfile]
set -eu
dockerfile="${1:-$(dirname "$0")/../Dockerfile}"
pinned="$(sed -n 's/^ARG NODE_IMAGE=//p' "$dockerfile")"
case "$pinned" in
  *@sha256:*) ;;
  *) echo "the Dockerfile's NODE_IMAGE is not pinned by digest: $pinned" >&2; exit 1 ;;
esac
tag="${pinned%@*}"
want="${pinned#*@}"

if command -v crane >/dev/null 2>&1; then
  exists() { crane manifest "$1" >/dev/null 2>&1; }
  current() { crane digest "$1"; }
elif docker buildx version >/dev/null 2>&1; then
  exists() { docker buildx imagetools inspect "$1" >/dev/null 2>&1; }
  current() { docker buildx imagetools inspect "$1" --format '{{json .Manifest}}' | sed -n 's/.*"digest":"\(sha256:[0-9a-f]*\)".*/\1/p' | head -n 1; }
else
  echo "neither crane nor docker buildx is installed: nothing checked" >&2
  exit 3
fi

if ! now="$(current "$tag")" || [ -z "$now" ]; then
  echo "cannot read $tag from its registry (no network?): nothing checked" >&2
  exit 3
fi
if [ "$now" = "$want" ]; then
  echo "ok: $tag is $want"
  exit 0
fi
if ! exists "$tag@$want"; then
  echo "the pinned $tag@$want does not exist in the registry (the tag is $now now)" >&2
  exit 1
fi
echo "the pinned $want exists, but $tag has moved on to $now: refresh ARG NODE_IMAGE" >&2
exit 2
