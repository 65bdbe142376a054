set -u
cd /tmp/tclone
export CGO_ENABLED=0
T=/tmp/t8
git log --oneline -1 > $T/commit.txt; go version >> $T/commit.txt; nproc >> $T/commit.txt
# cold: empty build cache
uptime > $T/cold.load
GOCACHE=$(mktemp -d) /usr/bin/time -o $T/cold.time -f '%e s wall, %U s user, %S s sys' go test -vet=off -ldflags=-w ./... > $T/cold.log 2>&1
# README order: install, then the test command, from another empty cache
export GOCACHE=$(mktemp -d)
uptime > $T/install.load
/usr/bin/time -o $T/install.time -f '%e s wall, %U s user, %S s sys' go install ./cmd/gpuwatt > $T/install.log 2>&1
uptime > $T/after-install.load
/usr/bin/time -o $T/after-install.time -f '%e s wall, %U s user, %S s sys' go test -vet=off -ldflags=-w ./... > $T/after-install.log 2>&1
uptime > $T/warm.load
/usr/bin/time -o $T/warm.time -f '%e s wall, %U s user, %S s sys' go test -vet=off -ldflags=-w -count=1 ./... > $T/warm.log 2>&1
echo done > $T/DONE
