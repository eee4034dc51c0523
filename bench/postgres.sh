#!/usr/bin/env bash
# baas on PostgreSQL: W1-W4 of ../shared/bench (its WORKLOAD.md) on one node and on two or three nodes
# sharing one database, next to Parse Server 9 on PostgreSQL 15. From the project root, after `npm run build`:
#
#   bench/postgres.sh                                       one node, then two nodes; prints the table
#   MODES="one two three" bench/postgres.sh                 one, two and three nodes
#   REPEAT=3 bench/postgres.sh                              medians of 3 alternating runs of each
#   DURATION=2s WARMUP=1s RECORDS=10000 bench/postgres.sh   a quick check that everything works
#
# It starts a throwaway PostgreSQL cluster (initdb in a temp directory, a free loopback port, durable
# as in production: fsync and synchronous_commit on), makes a fresh empty database for every run, and
# removes the cluster at the end, on an error and on Ctrl-C too. As root, PostgreSQL runs as the
# `postgres` system user (runuser), as the test cluster does.
#   one node:  ../shared/bench/compare.sh with BAAS_SERVE_ARGS="--database <fresh database>" (its baas
#              target, plus its SQLite ceiling run, back to back); PostgreSQL runs on the server CPU
#              with baas, as the workload puts Parse and its PostgreSQL there.
#   two (three) nodes: two (three) `baas serve --database <the same fresh database>` on their own ports,
#              set up as the baas target does (its target_setup: collection `posts`, rules, index on n, a
#              registered writer); W4's chunks go to the nodes in turn (one request in flight per node);
#              W1-W3 run one wrk per node at once, the connections shared out between them; the req/s
#              add up, a latency is the slowest node's.
# Env: BENCH_DIR (../shared/bench; run.sh writes its results/ and data/ there), BAAS_BIN (dist/baas),
#      MODES ("one two"; also "three"), REPEAT (1), DURATION (10s), WARMUP (3s), CONNS (32), THREADS (1),
#      RECORDS (100000), CHUNK (500), SERVER_CPU (1), CLIENT_CPU (0), NODE_CPUS (the CPUs of node A, B
#      and C, default SERVER_CPU for each; a node past the list takes the last one), PG_SHARED_BUFFERS (512MB).
# Raw results: bench/data/postgres-<time>/ (several nodes) and BENCH_DIR/results/raw/baas-* (one node).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH=$(cd "${BENCH_DIR:-$ROOT/../shared/bench}" && pwd)
BIN=$(readlink -f "${BAAS_BIN:-$ROOT/dist/baas}")
[[ -x $BIN ]] || { echo "no baas binary at $BIN (npm run build first, or set BAAS_BIN)" >&2; exit 2; }
[[ -f $BENCH/compare.sh && -f $BENCH/lib/common.sh ]] || { echo "no benchmark harness at $BENCH (set BENCH_DIR)" >&2; exit 2; }

: "${MODES:=one two}" "${REPEAT:=1}" "${DURATION:=10s}" "${WARMUP:=3s}" "${CONNS:=32}" "${THREADS:=1}"
: "${RECORDS:=100000}" "${CHUNK:=500}" "${SERVER_CPU:=1}" "${CLIENT_CPU:=0}" "${PG_SHARED_BUFFERS:=512MB}"
: "${NODE_CPUS:=$SERVER_CPU $SERVER_CPU}"
read -r -a NODE_CPU <<<"$NODE_CPUS"
((${#NODE_CPU[@]} >= 1)) || { echo "NODE_CPUS must name at least one CPU" >&2; exit 2; }
while ((${#NODE_CPU[@]} < 3)); do NODE_CPU+=("${NODE_CPU[-1]}"); done
export DURATION WARMUP CONNS THREADS RECORDS CHUNK SERVER_CPU CLIENT_CPU
export LIST_GT=500 # W3's filter, for lib/check.ts
USER_PORT=${PORT-} # the port of the one-node runs (the harness's default when unset)

# shellcheck source=/dev/null
source "$BENCH/lib/common.sh"
(cd "$BENCH" && [[ -x node_modules/.bin/bun ]] && command -v wrk >/dev/null && command -v jq >/dev/null) ||
  (cd "$BENCH" && ./setup.sh >/dev/null 2>&1) || die "the harness's setup.sh failed"
BUN=$BENCH/node_modules/.bin/bun
OUT=$ROOT/bench/data/postgres-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
# this shell, samplers, curl and jq stay off the server's CPU, as in run.sh
taskset -pc "$CLIENT_CPU" $$ >/dev/null

# ---- the cluster ------------------------------------------------------------------------------
PGBIN=""
for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -n -r); do
  v=${d#/usr/lib/postgresql/}; v=${v%/bin}
  [[ $v =~ ^[0-9]+$ ]] && ((v >= 15)) && [[ -x $d/initdb && -x $d/pg_ctl ]] && { PGBIN=$d; break; }
done
[[ -n $PGBIN ]] || { command -v initdb >/dev/null && PGBIN=$(dirname "$(command -v initdb)"); } ||
  die "PostgreSQL 15+ server binaries (initdb, pg_ctl) not found: install Debian's postgresql package"
AS_PG=()
if ((EUID == 0)); then
  id -u postgres >/dev/null 2>&1 || die "running as root without a postgres system user to run PostgreSQL as"
  AS_PG=(runuser -u postgres --)
fi
PGDIR=$(mktemp -d /tmp/baas-pgbench-XXXXXX)
((EUID == 0)) && chown postgres: "$PGDIR"
PGPORT=$("$BUN" -e 'const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } }); console.log(s.port); s.stop(true)')

NODE_PIDS=()
cleanup() {
  local p
  for p in "${NODE_PIDS[@]}"; do stop_pid "$p" "baas node"; done
  if [[ -f $PGDIR/data/postmaster.pid ]]; then
    log "stopping PostgreSQL"
    "${AS_PG[@]}" "$PGBIN/pg_ctl" -D "$PGDIR/data" -m fast -w stop >/dev/null 2>&1 ||
      "${AS_PG[@]}" "$PGBIN/pg_ctl" -D "$PGDIR/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$PGDIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "PostgreSQL $("$PGBIN/postgres" --version | awk '{ print $3 }'): initdb in $PGDIR, port $PGPORT, CPU $SERVER_CPU"
"${AS_PG[@]}" "$PGBIN/initdb" -D "$PGDIR/data" -U postgres -A trust -E UTF8 --locale=C --no-instructions >"$OUT/initdb.log" 2>&1 ||
  die "initdb failed: $(tail -3 "$OUT/initdb.log")"
PGOPTS="-p $PGPORT -k $PGDIR -c listen_addresses=127.0.0.1 -c max_connections=200"
PGOPTS+=" -c fsync=on -c synchronous_commit=on -c full_page_writes=on -c shared_buffers=$PG_SHARED_BUFFERS"
taskset -c "$SERVER_CPU" "${AS_PG[@]}" "$PGBIN/pg_ctl" -D "$PGDIR/data" -o "$PGOPTS" -l "$PGDIR/server.log" -w -t 60 start >/dev/null ||
  die "PostgreSQL did not start: $(tail -5 "$PGDIR/server.log" 2>/dev/null)"

# fresh_db NAME: creates an empty database and prints its URL
fresh_db() {
  local name=$1
  "$PGBIN/psql" -X -q -h 127.0.0.1 -p "$PGPORT" -U postgres -d postgres -c "CREATE DATABASE $name" >/dev/null ||
    die "CREATE DATABASE $name failed"
  echo "postgres://postgres@127.0.0.1:$PGPORT/$name"
}

# ---- one node: the harness's own baas target --------------------------------------------------
ONE=()
one_node() {
  local url status=0
  url=$(fresh_db "one_$1")
  # the harness's targets take PORT from the environment: the caller's, not a node's of a two-node run
  if [[ -n $USER_PORT ]]; then export PORT=$USER_PORT; else unset PORT; fi
  log "one node: compare.sh (ceiling, then baas on $url)"
  BAAS_SERVE_ARGS="--database $url" REPEAT=1 "$BENCH/compare.sh" "$BIN" >"$OUT/compare-$1.txt" 2>&1 || status=$?
  sed 's/^/    /' "$OUT/compare-$1.txt" >&2
  ((status < 2)) || die "compare.sh failed (its logs: /tmp/bench-baas.log, /tmp/bench-l0bt.log)"
  ONE+=("$(ls -td "$BENCH"/results/raw/baas-* | head -1)/summary.json")
}

# ---- several nodes ------------------------------------------------------------------------------
# shellcheck source=/dev/null
BAAS_BIN=$BIN
source "$BENCH/targets/baas.sh" # W*_PATH, BAAS_ADMIN_SECRET, target_setup (as the one-node runs)
TWO=()
THREE=()
free_port() { "$BUN" -e 'const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } }); console.log(s.port); s.stop(true)'; }

# run_wrkn NAME SCRIPT PATH HEADER...: warm-up, then the measured run, one wrk per node at once (CONNS shared out)
run_wrkn () {
  local name=$1 script=$2 path=$3; shift 3
  local hargs=() h phase dur n c0 c1 k0 k1 pids conns files
  for h in "$@"; do hargs+=(-H "$h"); done
  for phase in warm run; do
    dur=$WARMUP; [[ $phase == run ]] && dur=$DURATION
    c0=$(cpu_ticks "$SERVER_CPU"); k0=$(cpu_ticks "$CLIENT_CPU"); pids=()
    for ((n = 0; n < ${#BASES[@]}; n++)); do
      conns=$((CONNS / ${#BASES[@]} + (n < CONNS % ${#BASES[@]} ? 1 : 0)))
      WRK_LIB=$BENCH/lib/wrk WRK_JSON=$RUN_DIR/$name.$phase.$n.json W_PATH=$path W_PATH_PREFIX=$path \
        IDS_FILE=$RUN_DIR/ids.txt timeout 120 taskset -c "$CLIENT_CPU" wrk -t"$THREADS" -c"$conns" -d"$dur" \
        --timeout 10s --latency -s "$BENCH/lib/wrk/$script" "${hargs[@]}" "${BASES[n]}$path" >"$RUN_DIR/$name.$phase.$n.txt" 2>&1 &
      pids+=($!)
    done
    for ((n = 0; n < ${#BASES[@]}; n++)); do wait "${pids[n]}" || die "wrk $name on node $n failed: $(tail -5 "$RUN_DIR/$name.$phase.$n.txt")"; done
    c1=$(cpu_ticks "$SERVER_CPU"); k1=$(cpu_ticks "$CLIENT_CPU")
  done
  files=()
  for ((n = 0; n < ${#BASES[@]}; n++)); do files+=("$RUN_DIR/$name.run.$n.json"); done
  jq -cs --arg s "$(cpu_busy_pct "$c0" "$c1")" --arg c "$(cpu_busy_pct "$k0" "$k1")" '{
      requests: (map(.requests) | add), seconds: (map(.seconds) | max), rps: (map(.rps) | add * 10 | round / 10),
      errors: (map(.errors) | reduce .[] as $e ({}; reduce ($e | keys[]) as $k (.; .[$k] += $e[$k]))),
      latency_us: {p50: (map(.latency_us.p50) | max), p90: (map(.latency_us.p90) | max),
                   p99: (map(.latency_us.p99) | max), max: (map(.latency_us.max) | max)},
      per_node_rps: map(.rps), server_cpu_pct: ($s | tonumber), client_cpu_pct: ($c | tonumber)}' \
    "${files[@]}" >"$RUN_DIR/$name.json"
  log "$name: $(jq -c '{rps, per_node_rps, p50_ms: (.latency_us.p50/1000), p99_ms: (.latency_us.p99/1000), errors, server_cpu_pct, client_cpu_pct}' "$RUN_DIR/$name.json")"
}

# nodes COUNT WORD RUN: COUNT nodes on one fresh database (WORD names the runs: two, three)
nodes() {
  local count=$1 word=$2 url n port c0 bulk_args=() h urls=() where=""
  RUN_DIR=$OUT/$word-$3
  mkdir -p "$RUN_DIR"
  url=$(fresh_db "${word}_$3")
  BASES=()
  for ((n = 0; n < count; n++)); do
    port=$(free_port)
    mkdir -p "$RUN_DIR/data-$n"
    env ADMIN_SECRET="$BAAS_ADMIN_SECRET" taskset -c "${NODE_CPU[n]}" "$BIN" serve --port "$port" --data "$RUN_DIR/data-$n" \
      --database "$url" >"$RUN_DIR/node-$n.log" 2>&1 &
    NODE_PIDS+=($!)
    BASES+=("http://127.0.0.1:$port")
  done
  for ((n = 0; n < count; n++)); do
    READY_ANY_STATUS=1 wait_http "${BASES[n]}$READY_PATH" 60 "${NODE_PIDS[n]}"
    urls+=("${BASES[n]}$W4_PATH")
    where+=" node $n CPU ${NODE_CPU[n]},"
  done
  log "$word nodes: ${BASES[*]} on $url ($where PostgreSQL CPU $SERVER_CPU, load CPU $CLIENT_CPU)"
  PORT=${BASES[0]##*:}
  target_setup # through node A; the other nodes see the collection, the index and the user from the database

  log "W4 bulk: $RECORDS records in chunks of $CHUNK, the nodes in turn"
  for h in "${WRITE_HEADERS[@]}"; do bulk_args+=(--header "$h"); done
  c0=$(cpu_ticks "$SERVER_CPU")
  timeout 1800 taskset -c "$CLIENT_CPU" "$BUN" "$ROOT/bench/postgres-bulk.ts" --lib "$BENCH/lib" "${bulk_args[@]}" \
    --records "$RECORDS" --chunk "$CHUNK" --ids-out "$RUN_DIR/ids.txt" --out "$RUN_DIR/w4.json" \
    "${urls[@]}" >/dev/null || die "W4 bulk failed: $(cat "$RUN_DIR/w4.json" 2>/dev/null)"
  jq -c --arg s "$(cpu_busy_pct "$c0" "$(cpu_ticks "$SERVER_CPU")")" '. + {server_cpu_pct: ($s | tonumber)}' \
    "$RUN_DIR/w4.json" >"$RUN_DIR/w4.tmp" && mv "$RUN_DIR/w4.tmp" "$RUN_DIR/w4.json"
  log "W4: $(jq -c '{records_per_s, seconds, chunk_ms_p99, server_cpu_pct}' "$RUN_DIR/w4.json")"

  for ((n = 0; n < count; n++)); do
    log "checking W1-W3 answers on node $n"
    W1_URL=${BASES[n]}$W1_PATH W2_PREFIX=${BASES[n]}$W2_PREFIX W3_URL=${BASES[n]}$W3_PATH IDS_FILE=$RUN_DIR/ids.txt \
      WRITE_HEADERS=$(printf '%s\n' "${WRITE_HEADERS[@]}") READ_HEADERS="" "$BUN" "$BENCH/lib/check.ts" >&2 ||
      die "check failed on node $n"
  done

  log "W2 get-by-id ($CONNS conns over $word nodes, $DURATION)"
  run_wrkn w2 get.lua "$W2_PREFIX"
  log "W3 list ($CONNS conns over $word nodes, $DURATION)"
  run_wrkn w3 list.lua "$W3_PATH"
  log "W1 create ($CONNS conns over $word nodes, $DURATION)"
  run_wrkn w1 create.lua "$W1_PATH" "${WRITE_HEADERS[@]}"

  jq -n --arg url "$url" --slurpfile w1 "$RUN_DIR/w1.json" --slurpfile w2 "$RUN_DIR/w2.json" \
    --slurpfile w3 "$RUN_DIR/w3.json" --slurpfile w4 "$RUN_DIR/w4.json" \
    --arg target "baas-$count-nodes" '{target: $target, duration: env.DURATION, conns: (env.CONNS | tonumber), w1: $w1[0], w2: $w2[0], w3: $w3[0], w4: $w4[0]}' \
    >"$RUN_DIR/summary.json"
  for ((n = 0; n < count; n++)); do stop_pid "${NODE_PIDS[n]}" "baas node $n"; done
  NODE_PIDS=()
  if ((count == 2)); then TWO+=("$RUN_DIR/summary.json"); else THREE+=("$RUN_DIR/summary.json"); fi
}

for ((i = 1; i <= REPEAT; i++)); do
  if [[ " $MODES " == *" one "* ]]; then one_node "$i"; fi
  if [[ " $MODES " == *" two "* ]]; then nodes 2 two "$i"; fi
  if [[ " $MODES " == *" three "* ]]; then nodes 3 three "$i"; fi
done

report_args=()
for f in "${ONE[@]}"; do report_args+=(--one "$f"); done
for f in "${TWO[@]}"; do report_args+=(--two "$f"); done
for f in "${THREE[@]}"; do report_args+=(--three "$f"); done
{
  echo "baas $("$BIN" --version 2>/dev/null || echo '?') on PostgreSQL $("$PGBIN/postgres" --version | awk '{ print $3 }')" \
    "(fsync on, synchronous_commit on, shared_buffers $PG_SHARED_BUFFERS); $(nproc --all) CPUs; DURATION=$DURATION WARMUP=$WARMUP" \
    "CONNS=$CONNS RECORDS=$RECORDS CHUNK=$CHUNK REPEAT=$REPEAT"
  echo "Pinning: one node: baas and PostgreSQL on CPU $SERVER_CPU, wrk and the W4 loader on CPU $CLIENT_CPU;" \
    "several nodes: node A on CPU ${NODE_CPU[0]}, node B on CPU ${NODE_CPU[1]}, node C on CPU ${NODE_CPU[2]}," \
    "PostgreSQL on CPU $SERVER_CPU, one wrk per node (the $CONNS connections shared out) and the W4 loader on CPU $CLIENT_CPU."
  echo
} >"$OUT/table.md"
status=0
"$BUN" "$ROOT/bench/postgres-report.ts" "${report_args[@]}" >>"$OUT/table.md" || status=$?
cat "$OUT/table.md"
log "table in $OUT/table.md"
exit "$status"
