#!/usr/bin/env bash
# Run several commands at once; print each one's output and time when all are done; fail if any failed.
#
#   tests/run_at_once.sh "NAME" "COMMAND" ["NAME" "COMMAND" ...]
#
# The first command's output goes straight to the terminal (it is the one a developer watches);
# the others' are kept and printed after it, each under its name, in the order given. Every
# command runs in its own shell from the current folder, started at the same moment.
set -u
[ $# -ge 2 ] && [ $(($# % 2)) -eq 0 ] || { echo "usage: $0 NAME COMMAND [NAME COMMAND ...]" >&2; exit 2; }

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
start=$(date +%s)
names=()
i=0
while [ $# -gt 0 ]; do
  names+=("$1")
  if [ "$i" -eq 0 ]; then
    ( bash -c "$2"; echo $? > "$dir/$i.rc"; echo $(( $(date +%s) - start )) > "$dir/$i.s" ) &
  else
    ( bash -c "$2" > "$dir/$i.log" 2>&1; echo $? > "$dir/$i.rc"; echo $(( $(date +%s) - start )) > "$dir/$i.s" ) &
  fi
  shift 2
  i=$((i + 1))
done
wait

failed=0
for j in "${!names[@]}"; do
  if [ "$j" -gt 0 ]; then
    echo "--- ${names[$j]}:"
    cat "$dir/$j.log"
  fi
done
echo "--- time of each run, all started together:"
for j in "${!names[@]}"; do
  rc=$(cat "$dir/$j.rc")
  echo "make test: ${names[$j]}: $(cat "$dir/$j.s") s$([ "$rc" -eq 0 ] || echo ", FAILED (exit $rc)")"
  [ "$rc" -eq 0 ] || failed=1
done
echo "make test: all done after $(( $(date +%s) - start )) s"
exit $failed
