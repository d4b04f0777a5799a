cd /work/main
for round in 1 2 3; do
  for which in before after; do
    echo "== round $round $which"
    /tmp/acc-$which bench run --presets paper-write-zipf --engines accordion --policies none,basic,adaptive:0.5 --dir /tmp/fb --json /tmp/fb-$which-$round.json 2>&1 | sed -n '1,6p'
  done
done
