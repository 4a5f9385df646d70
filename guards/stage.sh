# Sourced by a guard's build.sh (after ../env.sh): stage_guard NAME copies
# the guard, guards/lib, its corpora and the Rust SDK into one workspace at
# a fixed place in the toolchain cache, builds it there with the Rust guest
# recipe (build_rust), and leaves the component in out/guard-NAME.wasm.
#
# Why a staged copy: cargo names each crate of a build (`-C metadata`,
# which ends up in symbol names) by its path relative to the workspace
# root, but by its absolute path when it is outside the root, as guards/lib
# and sdk/rust are for guards/NAME. Built in place, the component's bytes
# would depend on where the repository is checked out. In the stage every
# crate is inside one root, and the root's own path is remapped away.
stage_guard() {
  local name=$1 here=$PWD stage=$CACHE/guard-stage/$1
  rm -rf "$stage" && mkdir -p "$stage/guards/$name" "$stage/sdk" "$stage/out"
  cp -r ../lib ../corpus "$stage/guards/"
  cp -r Cargo.toml Cargo.lock src "$stage/guards/$name/"
  cp -r "$SDK/rust" "$stage/sdk/" && cp -r "$SDK/../wit" "$stage/sdk/wit"
  sed -i '/^\[workspace\]$/d' "$stage/guards/$name/Cargo.toml"
  # guards/lib's dev-dependencies are its native tests' (they name the
  # repository's workspace versions); a guest never builds them.
  sed -i '/^\[dev-dependencies\]$/,$d' "$stage/guards/lib/Cargo.toml"
  cp Cargo.lock "$stage/Cargo.lock"
  cat > "$stage/Cargo.toml" <<TOML
[workspace]
members = ["guards/$name"]
resolver = "3"

[workspace.package]
version = "0.1.0"
edition = "2024"
rust-version = "1.95"
license = "Apache-2.0"
publish = false

[workspace.lints.rust]

[profile.release]
opt-level = 3
lto = true
codegen-units = 1
panic = "abort"
strip = "debuginfo"
TOML
  (cd "$stage" && build_rust "guard-$name")
  mkdir -p out && cp "$stage/out/guard-$name.wasm" "out/guard-$name.wasm"
}
