# Sourced by the scripts in this folder: one place for the build settings they share.
# Everything builds in the release profile (tests, benches, the CLI), so RocksDB's C++ is
# compiled once. The target directory lives outside the clone so that fresh clones on the same
# machine reuse the build; set CARGO_TARGET_DIR to put it elsewhere.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/leakcheck-target}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
cd "$root"
# A script that needs more (scripts/test: a browser) sets ensure_deps_args before sourcing this.
"$here/ensure-deps" ${ensure_deps_args[@]+"${ensure_deps_args[@]}"}
