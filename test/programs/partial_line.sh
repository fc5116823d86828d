#!/usr/bin/env bash
# Prints one complete line, then a last line with no trailing newline, on each stream.
printf 'first line\nlast line without newline'
printf 'err line\nerr tail without newline' >&2
