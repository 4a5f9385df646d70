#!/usr/bin/env bash
# Builds toolgate:paths into out/guard-paths.wasm (see guards/build.sh).
cd "$(dirname "$0")" && . ../env.sh && . ../stage.sh
stage_guard paths
