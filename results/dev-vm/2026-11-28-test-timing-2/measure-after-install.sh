#!/usr/bin/env bash
# measure-after-install.sh CLONE OUTDIR: the README's two set-up commands in order, in CLONE (a
# fresh git clone) with an empty GOCACHE (the module cache is the machine's, already filled):
# the install command, then the test command, each timed by /usr/bin/time -v, with uptime's
# load before and after. GOBIN is a temporary directory (nothing is installed for real).
set -euo pipefail
clone=$(cd "$1" && pwd); out=$(mkdir -p "$2" && cd "$2" && pwd)
cd "$clone"
install_cmd=$(grep -m1 -E '^CGO_ENABLED=0 go install ' README.md)
test_cmd=$(grep -m1 -E '^CGO_ENABLED=0 go test ' README.md)
printf '%s\n' "$install_cmd" "$test_cmd" > "$out/command"
{ git log --oneline -1; go version; echo "nproc $(nproc)"; } > "$out/env"
export GOCACHE GOBIN; GOCACHE=$(mktemp -d); GOBIN=$(mktemp -d)
trap 'rm -rf "$GOCACHE" "$GOBIN"' EXIT
i=0
for cmd in "$install_cmd" "$test_cmd"; do
  i=$((i + 1))
  uptime > "$out/step$i.time"
  /usr/bin/time -v -a -o "$out/step$i.time" bash -c "$cmd > '$out/step$i.out' 2>&1" || echo "rc $?" >> "$out/step$i.time"
  uptime >> "$out/step$i.time"
done
