#!/usr/bin/env bash
# nvl72emu: --version and --help exit 0; bad arguments print one clear line and exit 2.
set -u
exe=$1
fail=0
check() {  # check WANT_RC PATTERN DESCRIPTION ARGS...
  local want=$1 pat=$2 what=$3 out rc; shift 3
  out=$("$exe" "$@" 2>&1); rc=$?
  if [ "$rc" -ne "$want" ] || ! grep -q -- "$pat" <<<"$out"; then
    echo "FAIL: $what: rc=$rc"; echo "$out"; fail=1
  else
    echo "ok: $what"
  fi
}
check 0 "^nvl72emu [0-9]" "--version prints the version" --version
check 0 "Usage: nvl72emu" "--help prints usage" --help
check 2 "not expected: --bogus" "an unknown flag exits 2" --bogus
check 2 "not expected: frobnicate" "an unknown subcommand exits 2" frobnicate
check 2 "no calibration row matches" "validate --only with no match exits 2" validate --only no_such_row
check 0 "2 rows, 2 pass, 0 fail" "validate --only v6 runs V6's rows alone and exits 0" validate --only v6
check 2 "excludes" "validate --strict with --measured exits 2" validate --strict --measured /no/such.csv
check 2 "no such file or folder" "trace stats on a missing trace exits 2" trace stats /no/such/trace.jsonl
exit $fail
