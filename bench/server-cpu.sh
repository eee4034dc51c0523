#!/usr/bin/env bash
# Server CPU per request, end to end: the CPU time the server process (all its threads) spent during
# W4 (bulk insert of 100,000 records, 500 per request), W2 (GET by id, wrk, 32 connections, 5 s) and W1
# (create as the regular user, wrk, 32 connections, 5 s) of ../shared/bench, divided by the records or requests. Unlike req/s it changes little when other jobs
# share the machine. Server on CPU 1, load on CPU 0, as compare.sh does.
#   bench/server-cpu.sh ceil | path/to/baas [label]      (BENCH: the shared bench, default ../shared/bench)
set -u
H=$(cd "${BENCH:-../shared/bench}" && pwd); BUN=$H/node_modules/.bin/bun; PORT=${PORT:-8294}
D=$(mktemp -d); mkdir -p "$D"
what=$1; label=${2:-$1}
if [ "$what" = ceil ]; then
  DATA=$D PORT=$PORT taskset -c 1 $BUN $H/limits/l0b-sqlite.ts > $D/server.log 2>&1 & SP=$!
  B=http://127.0.0.1:$PORT; BULK=$B/posts/bulk; PREFIX=/posts/; HDR=(); W1_PATH=/posts; WHDR=()
  for i in $(seq 50); do curl -s -o /dev/null $B/health && break; sleep 0.1; done
else
  ADMIN_SECRET=bench-admin-secret-0123456789 taskset -c 1 $what serve --port $PORT --data $D > $D/server.log 2>&1 & SP=$!
  B=http://127.0.0.1:$PORT/api/v1; A="Authorization: Bearer bench-admin-secret-0123456789"
  for i in $(seq 50); do curl -s -o /dev/null $B/health && break; sleep 0.1; done
  curl -s -X POST -H "$A" -H 'content-type: application/json' $B/admin/collections -d '{"name":"posts","rules":{"read":"public","create":"authenticated","update":"owner","delete":"owner"}}' >/dev/null
  seed=$(curl -s -X POST -H "$A" -H 'content-type: application/json' $B/posts -d '{"title":"seed","n":0,"tags":["a","b"],"done":false}' | jq -r ._id)
  curl -s -X POST -H "$A" -H 'content-type: application/json' $B/admin/collections/posts/indexes -d '{"fields":["n"]}' >/dev/null
  curl -s -o /dev/null -X DELETE -H "$A" $B/admin/collections/posts/records/$seed
  tok=$(curl -s -X POST -H 'content-type: application/json' $B/auth/register -d '{"email":"writer@example.com","password":"bench-writer-password"}' | jq -r .access_token)
  BULK=$B/posts/bulk; PREFIX=/api/v1/posts/; HDR=(--header "Authorization: Bearer $tok"); W1_PATH=/api/v1/posts; WHDR=(-H "Authorization: Bearer $tok")
fi
cpu() { awk '{print $14+$15}' /proc/$SP/stat; }
c0=$(cpu); taskset -c 0 $BUN $H/lib/bulk.ts --url $BULK --mode array "${HDR[@]}" --records 100000 --chunk 500 --ids-out $D/ids.txt --out $D/w4.json >/dev/null; c1=$(cpu)
w4=$(jq .records_per_s $D/w4.json)
sleep 1
WRK_LIB=$H/lib/wrk WRK_JSON=$D/w2warm.json W_PATH_PREFIX=$PREFIX IDS_FILE=$D/ids.txt taskset -c 0 wrk -t1 -c32 -d1s -s $H/lib/wrk/get.lua http://127.0.0.1:$PORT$PREFIX >/dev/null 2>&1
c2=$(cpu); WRK_LIB=$H/lib/wrk WRK_JSON=$D/w2.json W_PATH_PREFIX=$PREFIX IDS_FILE=$D/ids.txt taskset -c 0 wrk -t1 -c32 -d5s -s $H/lib/wrk/get.lua http://127.0.0.1:$PORT$PREFIX > $D/w2.txt 2>&1; c3=$(cpu)
reqs=$(grep -o '[0-9]* requests in' $D/w2.txt | cut -d' ' -f1)
sleep 1
c4=$(cpu); WRK_LIB=$H/lib/wrk WRK_JSON=$D/w1.json W_PATH=$W1_PATH taskset -c 0 wrk -t1 -c32 -d5s -s $H/lib/wrk/create.lua "${WHDR[@]}" http://127.0.0.1:$PORT$W1_PATH > $D/w1.txt 2>&1; c5=$(cpu)
w1=$(grep -o '[0-9]* requests in' $D/w1.txt | cut -d' ' -f1)
kill $SP; wait $SP 2>/dev/null
tick=$(getconf CLK_TCK)
echo "$label load[$(cut -d' ' -f1 /proc/loadavg)] W4 $w4 rec/s, $(awk -v t=$((c1-c0)) -v k=$tick 'BEGIN{printf "%.1f", t/k*1e6/100000}') µs CPU/record; W2 $reqs req in 5s, $(awk -v t=$((c3-c2)) -v k=$tick -v n=$reqs 'BEGIN{printf "%.1f", t/k*1e6/n}') µs CPU/request; W1 $w1 req in 5s, $(awk -v t=$((c5-c4)) -v k=$tick -v n=$w1 'BEGIN{printf "%.1f", t/k*1e6/n}') µs CPU/request"
rm -rf "$D"
