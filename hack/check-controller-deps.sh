#!/usr/bin/env bash
# Fails when the controller binary (cmd/wfguard, the only binary in the image) links the playground or test
# code: sandbox/ (an embedded control plane and a simulated node, cmd/wfguard-sandbox's), test/, compat/, interop/,
# bench/ or internal/zipbomb (hostile test data). Each offender is named with the linked packages that import it.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

module=$($GO list -m)
forbidden="^$module/(sandbox|test|compat|interop|bench|internal/zipbomb)(/|$)"
deps=$($GO list -deps -f '{{.ImportPath}}{{range .Imports}} {{.}}{{end}}' ./cmd/wfguard)
offenders=$(cut -d' ' -f1 <<<"$deps" | grep -E "$forbidden" || true)
if [ -z "$offenders" ]; then
  exit 0
fi
echo "cmd/wfguard (the controller binary and image) must not link the playground or test code, but links:"
for pkg in $offenders; do
  importers=$(awk -v p="$pkg" '{for (i = 2; i <= NF; i++) if ($i == p) {print $1; break}}' <<<"$deps" | paste -sd, - | sed "s/,/, /g")
  echo "  $pkg (imported by $importers)"
done
echo "Move what needs it to cmd/wfguard-sandbox or a test, or the code it needs out of sandbox/ and test/."
exit 1
