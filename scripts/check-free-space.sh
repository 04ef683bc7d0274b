#!/usr/bin/env bash
# Stops `make test` before the suite when a folder it writes to lacks the free space the suite needs at
# its peak (booted Debian roots with their packages, copies of the 80-115 MB executables): out of disk,
# tests fail far from the cause, each with its own error. Usage: check-free-space.sh GIB DIR...
# GIB may have decimals; 0 skips the check.
set -euo pipefail
need_gib=$1
shift
[[ "$need_gib" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "check-free-space.sh: '$need_gib' is not a number of GiB" >&2; exit 2; }
need_kib=$(awk -v g="$need_gib" 'BEGIN { printf "%d", g * 1048576 }')
(( need_kib == 0 )) && exit 0
for dir in "$@"; do
  avail_kib=$(df --output=avail -k "$dir" | tail -1 | tr -d ' ')
  if (( avail_kib < need_kib )); then
    avail=$(awk -v k="$avail_kib" 'BEGIN { printf "%.1f", k / 1048576 }')
    echo "make test: $avail GiB free for $dir; the suite needs about $need_gib GiB there at its peak." >&2
    echo "Free some space, or run 'make test TEST_FREE_GIB=0' to skip this check." >&2
    exit 1
  fi
done
