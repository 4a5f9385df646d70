#!/usr/bin/env bash
# Builds toolgate:taint into out/guard-taint.wasm (see guards/build.sh).
cd "$(dirname "$0")" && . ../env.sh && . ../stage.sh
stage_guard taint
