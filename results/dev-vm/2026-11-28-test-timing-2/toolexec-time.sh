#!/bin/bash
# toolexec: record user, sys, wall seconds of each tool invocation, and what it built
tool=$(basename "$1")
what=""
args=("$@")
for ((i=0;i<${#args[@]};i++)); do
  case "${args[$i]}" in
    -p) [ "$tool" = compile ] && what=${args[$((i+1))]};;
    -o) [ "$tool" = link ] && what=${args[$((i+1))]};;
  esac
done
[ "$tool" = vet ] && what=$(grep -o '"ImportPath": *"[^"]*"' "${args[-1]}" 2>/dev/null | head -1 | sed 's/.*: *"//;s/"//')
case " $* " in *" -V=full "*|*" -V "*|*" -flags "*) exec "$@";; esac
exec /usr/bin/time -a -o "${TEXEC_LOG:-texec.log}" -f "%U %S %e $tool $what" "$@"
