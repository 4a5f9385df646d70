#!/usr/bin/env bash
# Builds toolgate:egress into out/guard-egress.wasm (see guards/build.sh).
cd "$(dirname "$0")" && . ../env.sh && . ../stage.sh
stage_guard egress
