#!/usr/bin/env bash
# `cmake --install` to a prefix gives a binary that runs from there and reads its profiles from beside it
# (PREFIX/share/nvl72emu), not from the source tree it was built from.
set -u
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" > "$tmp/install.log" || { cat "$tmp/install.log"; exit 1; }
exe=$prefix/bin/nvl72emu
data=$prefix/share/nvl72emu
small=$data/scenarios/ci/small-pd.json
fail=0
if ! "$exe" run "$small" --set outputs.trace=false > "$tmp/run.log" 2>&1; then
  echo "FAIL: the installed binary does not run the installed small-pd scenario"; cat "$tmp/run.log"; fail=1
fi
# Break each installed profile kind in turn: the error must name the installed file.
for file in fakegpu/profiles/gb300.json fabric/profiles/gb300-nvl72.json engine/models/deepseek-v3.json; do
  cp "$data/$file" "$tmp/saved.json"
  echo '{' > "$data/$file"
  out=$("$exe" run "$small" 2>&1); rc=$?
  if [ "$rc" -ne 2 ] || ! grep -qF "$data/$file" <<<"$out"; then
    echo "FAIL: a broken installed $file is not what the binary read (rc=$rc): $out"; fail=1
  else
    echo "ok: reads $file from $data"
  fi
  cp "$tmp/saved.json" "$data/$file"
done
exit $fail
