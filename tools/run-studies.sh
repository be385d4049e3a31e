#!/usr/bin/env bash
# Reruns the shipped studies (scenarios/studies/*.json, or the names given) and copies each one's pages
# (study.md, study.html, study.json) to docs/studies/NAME/. Usage: run-studies.sh [NAME ...]
# NVL72EMU names the binary (default build/bin/nvl72emu; a copy lets the tree be rebuilt meanwhile).
set -euo pipefail
cd "$(dirname "$0")/.."
exe=${NVL72EMU:-build/bin/nvl72emu}
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in scenarios/studies/*.json; do names+=("$(basename "$f" .json)"); done
fi
for name in "${names[@]}"; do
  start=$SECONDS
  "$exe" study "scenarios/studies/$name.json" --out "out/studies/$name" || echo "study $name: a run failed (see out/studies/$name)"
  mkdir -p "docs/studies/$name"
  cp "out/studies/$name"/study.{md,html,json} "docs/studies/$name/"
  echo "study $name: docs/studies/$name/study.md ($((SECONDS - start)) s)"
done
