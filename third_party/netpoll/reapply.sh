#!/usr/bin/env bash
# reapply.sh: rebuild third_party/netpoll from an upstream version of
# github.com/cloudwego/netpoll with kraken.patch applied.
#
#   third_party/netpoll/reapply.sh v0.7.2          # rebuild from the version we carry
#   third_party/netpoll/reapply.sh --check v0.7.3  # only report whether the patch applies
#
# The upstream source comes from the module cache, or through the Go module
# proxy when it is not there (`go mod download`). The patch is tried first
# with --dry-run; if a hunk does not apply, nothing is changed and the
# conflicts (patch's output and the rejected hunks) are printed. Otherwise
# the folder is replaced by the patched upstream source, keeping PATCH.md,
# kraken.patch and this script, and the edited packages are vetted.
#
# After moving to a new version, update the `require` of
# github.com/cloudwego/netpoll in the root go.mod to it, run netpoll's tests
# (`make test` runs the subset for the edited files) and the memory
# measurements of PATCH.md, and regenerate kraken.patch if hunks moved:
#
#   diff -ruN --exclude=PATCH.md --exclude=kraken.patch --exclude=reapply.sh \
#       a b > kraken.patch    # a: pristine upstream, b: this folder, both copied under one dir
set -euo pipefail

check=0
if [ "${1:-}" = "--check" ]; then
	check=1
	shift
fi
version=${1:?usage: reapply.sh [--check] VERSION (for example v0.7.2)}
module=github.com/cloudwego/netpoll
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
patchfile=$here/kraken.patch
if [ "$(basename "$here")" != netpoll ] || [ ! -f "$here/go.mod" ] || [ ! -f "$patchfile" ]; then
	echo "reapply: run the copy in third_party/netpoll (beside go.mod and kraken.patch)" >&2
	exit 1
fi
own=(PATCH.md kraken.patch reapply.sh)

# Outside any module, so that go mod download does not touch a go.mod.
dir=$(cd /tmp && GOFLAGS=-mod=mod go mod download -json "$module@$version" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
if [ -z "$dir" ] || [ ! -d "$dir" ]; then
	echo "reapply: could not fetch $module@$version" >&2
	exit 1
fi
echo "upstream $module@$version: $dir"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -R "$dir" "$work/src"
chmod -R u+w "$work/src"

if ! out=$(cd "$work/src" && patch -p1 --dry-run --forward --reject-file=- <"$patchfile" 2>&1); then
	echo "reapply: kraken.patch does not apply cleanly to $version:" >&2
	echo "$out" >&2
	exit 1
fi
echo "$out"
if [ "$check" = 1 ]; then
	echo "reapply: kraken.patch applies cleanly to $version (nothing changed: --check)"
	exit 0
fi
(cd "$work/src" && patch -p1 --forward --quiet <"$patchfile")
for f in "${own[@]}"; do
	[ ! -e "$here/$f" ] || cp "$here/$f" "$work/src/$f"
done
# Replace the folder's content, not the folder (the script runs from it).
find "$here" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
cp -R "$work/src/." "$here/"
(cd "$here" && go vet . >/dev/null) || {
	echo "reapply: go vet fails on the patched source" >&2
	exit 1
}
echo "reapply: third_party/netpoll is now $module@$version with kraken.patch"
