#!/bin/sh
# Builds gimli's addr2line (the example program of the addr2line crate) offline, from the crate
# sources Debian ships in /usr/share/cargo/registry, into $1 (default: build/gimli-addr2line).
# Prints the binary's path. Packages: cargo librust-addr2line+default-dev librust-clap-3-dev
# librust-memmap2-dev librust-typed-arena-dev.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$(realpath -m "${1:-build/gimli-addr2line}")
mkdir -p "$out/cargo-home"
cat > "$out/cargo-home/config.toml" <<CONF
[source.crates-io]
replace-with = "debian"
[source.debian]
directory = "/usr/share/cargo/registry"
[net]
offline = true
CONF
# The manifest is copied out, so that cargo writes its lock file there, not in the tree.
mkdir -p "$out/crate"
cp "$here/Cargo.toml" "$out/crate/Cargo.toml"
CARGO_HOME="$out/cargo-home" CARGO_TARGET_DIR="$out/target" \
  cargo build --quiet --release --manifest-path "$out/crate/Cargo.toml" >&2
echo "$out/target/release/addr2line"
