#!/usr/bin/env bash
# Builds toolgate:shell into out/guard-shell.wasm (see guards/build.sh).
cd "$(dirname "$0")" && . ../env.sh && . ../stage.sh
stage_guard shell
