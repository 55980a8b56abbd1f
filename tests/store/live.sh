#!/usr/bin/env bash
# tests/store/live.sh TEST_BINARY — runs the S3 client's integration test
# (tests/store/test_s3_live.c) against a real s3rver (the pinned copy
# scripts/setup installs in .deps/s3rver, or $S3RVER) started here on a
# loopback port it picks itself (-p 0; the port is read from its
# "listening" line), in a temporary directory, with the bucket created at
# startup (--configure-bucket); and tests/store/s3proxy.py in front of it
# (SigV4/Content-MD5 checks and fault injection). Waits on their output,
# never sleeps; stops both on exit.
set -u
bin=${1:?usage: live.sh TEST_BINARY}
. "$(dirname "$0")/s3env.sh"

S3_BUCKET=ursa-test S3_DIRECT="http://127.0.0.1:$port" S3_PROXY="http://127.0.0.1:$pport" "$bin"
rc=$?
[ $rc = 0 ] || { echo "# s3rver log:"; tail -20 "$tmp/s3rver.log"; }
exit $rc
