#!/usr/bin/env bash
# Prints the working directory and the value of PARITY_PROBE (or "<unset>"), and whether HOME is set.
echo "cwd=$(pwd)"
echo "probe=${PARITY_PROBE-<unset>}"
echo "home=${HOME-<unset>}"
