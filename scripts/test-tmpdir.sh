#!/usr/bin/env bash
# Prints a new, empty folder for the temporary files of make test (its
# TMPDIR: the tests' repositories, working directories and DuckDB's spill
# folders, and go test's build folder). The parent is, in this order:
# $FDL_TEST_TMPDIR when set; /dev/shm when it is a writable RAM-backed
# file system with at least 4 GiB free (Linux); else ${TMPDIR:-/tmp}.
#
# Why RAM: the suite writes about 23 GB of short-lived files and fsyncs
# them as fdl does for a user; on a disk-backed /tmp that writeback cost a
# 2-core machine about 2 of the suite's 12 minutes and 190 s of its CPU
# (docs/performance.md, "what a small catalog costs each command"). The
# files are the same and fdl syncs them the same; only the medium differs.
set -euo pipefail
need_kib=$((4 * 1024 * 1024))
parent=${FDL_TEST_TMPDIR:-}
if [[ -z $parent && -d /dev/shm && -w /dev/shm ]] && [[ $(stat -f -c %T /dev/shm 2>/dev/null) == tmpfs ]]; then
	avail=$(df -Pk /dev/shm | awk 'NR == 2 { print $4 }')
	if [[ ${avail:-0} -ge $need_kib ]]; then
		parent=/dev/shm
	fi
fi
parent=${parent:-${TMPDIR:-/tmp}}
mktemp -d "$parent/fdl-test.XXXXXX"
