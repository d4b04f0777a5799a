#!/bin/bash
# A/B of the memory gauge (in-memory compactions start only if their copy fits under the global limit):
# each policy in its own invocation (its own process, so its own pool and arenas), before/after alternating.
set -u
for round in 1 2 3; do
  for policy in adaptive:0.35 eager basic none; do
    [ "$round" -gt 1 ] && { [ "$policy" = basic ] || [ "$policy" = none ]; } && continue
    for side in before after; do
      name="${side}-${policy//:/}-r${round}"
      echo "$(date +%T) $name load=$(cut -d' ' -f1 /proc/loadavg)" >> run-order.txt
      /tmp/acc-$side bench run --presets paper-write-zipf --engines accordion --policies "$policy" \
        --dir /tmp/gauge-bench --json "$name.json" > "$name.txt" 2>&1
    done
  done
done
