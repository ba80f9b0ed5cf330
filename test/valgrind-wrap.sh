#!/bin/sh
# Runs build/rdma-webhook under valgrind memcheck for the e2e suite
# (`make valgrind`): any memory error or leak makes the process exit 99,
# which the suite reports as a failed run.
here=$(cd "$(dirname "$0")/.." && pwd)
exec valgrind --quiet --error-exitcode=99 --leak-check=full \
    --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
    --suppressions="$here/test/valgrind.supp" "$here/build/rdma-webhook" "$@"
