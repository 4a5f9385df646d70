#!/usr/bin/env bash
# Builds toolgate:secrets into out/guard-secrets.wasm (see guards/build.sh).
cd "$(dirname "$0")" && . ../env.sh && . ../stage.sh
stage_guard secrets
