#!/bin/bash
for round in 1 2; do
  for v in tiny hyper; do
    /tmp/acc-$v bench scale --servers 1000 --regions 100000 --idle-secs 30 --no-failover --no-takeover --phase-timeout-secs 600 --json /tmp/ab/$v-$round.json > /tmp/ab/$v-$round.txt 2> /tmp/ab/$v-$round.stderr
  done
done
echo finished > /tmp/ab/done
