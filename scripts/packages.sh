#!/usr/bin/env bash
# Installs the Debian packages semclip needs when they are missing:
#   scripts/packages.sh build   the libraries it links (libxml2, libxslt) and
#                               the bindings generator's libclang
#   scripts/packages.sh test    also what the tests run: a real SMTP server
#                               (aiosmtpd), headless Chromium and PostgreSQL
#                               (the store's tests start a throwaway cluster
#                               of their own; the package's service is not
#                               used)
# As root it runs apt-get; otherwise through sudo when there is one;
# otherwise it prints the exact command to run and exits 1.
set -euo pipefail

build=(pkg-config libxml2-dev libxslt1-dev libclang-dev)
test=(python3-aiosmtpd chromium postgresql)

case "${1:-build}" in
  build) need=("${build[@]}") ;;
  test) need=("${build[@]}" "${test[@]}") ;;
  *) echo "usage: $0 build|test" >&2; exit 2 ;;
esac

missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "semclip needs these Debian/Ubuntu packages: ${missing[*]}" >&2
  echo "this system has no apt-get: install their equivalents, then run again" >&2
  exit 1
fi
if [ "$(id -u)" -eq 0 ]; then
  as=()
elif command -v sudo >/dev/null 2>&1; then
  as=(sudo)
else
  echo "semclip needs these packages, and installing them needs root:" >&2
  echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${as[@]}" apt-get update -q
"${as[@]}" apt-get install -y -q "${missing[@]}"
