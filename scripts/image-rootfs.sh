#!/bin/sh
# The runtime image's root (Dockerfile, stage rootfs): node and the shared libraries it links, and
# nothing else: no npm, no shell, no package manager (docs/deploy.md, "The image"). The libraries
# come from `ldd`, so the same lines serve every architecture the base image has.
#   scripts/image-rootfs.sh <destination> [node binary, default /usr/local/bin/node]
# test/deploy/image-rootfs.test.ts runs it on this machine's node and starts sluice in a chroot of it.
set -eu
dest="$1"
node="${2:-/usr/local/bin/node}"
mkdir -p "$dest/usr/local/bin" "$dest/etc" "$dest/tmp"
chmod 1777 "$dest/tmp"
cp -L "$node" "$dest/usr/local/bin/node"
for lib in $(ldd "$node" | grep -o '/[^ ]*'); do
  cp --parents -L "$lib" "$dest"
done
# glibc's name service order (hosts: files, then DNS); both are inside libc since glibc 2.34.
if [ -f /etc/nsswitch.conf ]; then cp /etc/nsswitch.conf "$dest/etc/"; fi
