#!/usr/bin/env bash
# Runs every load-generator scenario against kraken and the baseline broker,
# one fresh broker process per case, and prints one Markdown table:
# metric | kraken | baseline | ratio.
#
#   BENCH_SIZE=smoke|short|full bash bench/run.sh
#
# Reports go to bench/out/$BENCH_SIZE (override with BENCH_OUT); binaries to
# bench/bin. BENCH_ONLY="fanout latency-1" runs only the named cases.
set -euo pipefail

cd "$(dirname "$0")/.."
SIZE=${BENCH_SIZE:-short}
BIN=bench/bin
OUT=${BENCH_OUT:-bench/out/$SIZE}
KPORT=${BENCH_KRAKEN_PORT:-18080}
BPORT=${BENCH_BASELINE_PORT:-18090}
mkdir -p "$BIN" "$OUT"

echo "building into $BIN" >&2
go build -o "$BIN/kraken" ./cmd/kraken
go build -o "$BIN/loadgen" ./bench/loadgen
go build -o "$BIN/baseline" ./bench/baseline

BROKER_PID=""

stop_broker() {
	if [ -n "$BROKER_PID" ] && kill -0 "$BROKER_PID" 2>/dev/null; then
		kill -TERM "$BROKER_PID" 2>/dev/null || true
		for _ in $(seq 150); do
			kill -0 "$BROKER_PID" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$BROKER_PID" 2>/dev/null; then
			echo "broker $BROKER_PID did not stop; killing it" >&2
			kill -KILL "$BROKER_PID" 2>/dev/null || true
		fi
		wait "$BROKER_PID" 2>/dev/null || true
	fi
	BROKER_PID=""
}
trap stop_broker EXIT
trap 'exit 130' INT TERM

# start_broker NAME LOGFILE: starts kraken or the baseline and waits until
# its port accepts connections.
start_broker() {
	local name=$1 log=$2 port
	port=$KPORT
	[ "$name" = baseline ] && port=$BPORT
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		echo "port $port is already in use by another process; set BENCH_KRAKEN_PORT / BENCH_BASELINE_PORT" >&2
		return 1
	fi
	case $name in
	kraken)
		AUTH_ALLOW_ALL=true RATE_LIMIT=100000 WS_PORT=$KPORT LOG_LEVEL=warn \
			"$BIN/kraken" >"$log" 2>&1 &
		;;
	baseline)
		"$BIN/baseline" --addr "127.0.0.1:$BPORT" >"$log" 2>&1 &
		;;
	esac
	BROKER_PID=$!
	for _ in $(seq 100); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			sleep 0.2
			# The port must be ours: the broker must still be running.
			kill -0 "$BROKER_PID" 2>/dev/null && return 0
			break
		fi
		kill -0 "$BROKER_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "$name did not start; see $log" >&2
	return 1
}

# Cases: NAME SCENARIO LOADGEN-ARGS...
case $SIZE in
smoke)
	CASES=(
		"idle idle -n 200 --steps 4 --settle 200ms"
		"fanout fanout -n 200 --messages 20"
		"latency-1 latency -n 1 --rate 1000 --duration 1s"
		"latency-200 latency -n 200 --rate 100 --duration 1s"
		"connect connect -n 200"
		"storm storm -n 200 --rounds 2 --settle 200ms --steady-max 5s"
		"stream stream --topics 10 --subs 20 --rate 1000 --duration 1s"
	)
	;;
short)
	CASES=(
		"idle idle -n 5000 --start 1000 --steps 5 --procs 2 --settle 2s"
		"fanout fanout -n 5000 --messages 20"
		"latency-1 latency -n 1 --rate 1000 --duration 5s"
		"latency-1k latency -n 1000 --rate 100 --duration 5s"
		"connect connect -n 5000 --procs 2"
		"storm storm -n 5000 --procs 2 --concurrency 256 --rounds 2 --settle 2s"
		"stream stream --topics 100 --subs 20 --rate 20000 --duration 5s"
	)
	;;
full)
	CASES=(
		"idle idle -n 19000 --start 1000 --steps 4 --procs 2 --settle 3s"
		"fanout fanout -n 10000 --messages 20"
		"latency-1 latency -n 1 --rate 1000 --duration 10s"
		"latency-1k latency -n 1000 --rate 100 --duration 10s"
		"latency-10k latency -n 10000 --rate 1 --duration 20s"
		"connect connect -n 19000 --procs 2 --concurrency 64"
		"storm storm -n 19000 --procs 2 --concurrency 512 --rounds 3 --settle 3s"
		"stream stream --topics 100 --subs 100 --rate 10000 --duration 10s"
	)
	;;
*)
	echo "BENCH_SIZE must be smoke, short or full" >&2
	exit 2
	;;
esac

{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "size: $SIZE"
	echo "cpus: $(nproc)"
	echo "kernel: $(uname -r)"
	echo "go: $(go version)"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(git status --porcelain -- . ':(exclude)bench' 2>/dev/null | wc -l) changed paths outside bench/ in the work tree"
	echo "open files: $(ulimit -n)"
	for k in net.core.somaxconn net.ipv4.tcp_max_syn_backlog net.ipv4.ip_local_port_range net.ipv4.tcp_tw_reuse; do
		echo "$k: $(sysctl -n "$k" 2>/dev/null | tr '\t' ' ')"
	done
	echo "kraken: AUTH_ALLOW_ALL=true RATE_LIMIT=100000 LOG_LEVEL=warn, other settings default; GOGC and GOMAXPROCS default"
} >"$OUT/env.txt"

FAILED=()
PAIRS=()
for c in "${CASES[@]}"; do
	read -r -a words <<<"$c"
	name=${words[0]}
	scenario=${words[1]}
	args=("${words[@]:2}")
	if [ -n "${BENCH_ONLY:-}" ] && [[ " $BENCH_ONLY " != *" $name "* ]]; then
		continue
	fi
	ok=1
	for b in kraken baseline; do
		port=$KPORT
		[ "$b" = baseline ] && port=$BPORT
		echo "== $name: $b ($scenario ${args[*]})" >&2
		rm -f "$OUT/$b-$name.json"
		if ! start_broker "$b" "$OUT/$b-$name.broker.log"; then
			FAILED+=("$b-$name")
			ok=0
			stop_broker
			continue
		fi
		if ! "$BIN/loadgen" --url "ws://127.0.0.1:$port/ws" --pid "$BROKER_PID" --label "$b" \
			--scenario "$scenario" "${args[@]}" --json "$OUT/$b-$name.json" --md "$OUT/$b-$name.md" \
			>/dev/null 2> >(tee "$OUT/$b-$name.log" >&2); then
			FAILED+=("$b-$name")
			ok=0
		fi
		if ! kill -0 "$BROKER_PID" 2>/dev/null; then
			echo "$b exited during $name; see $OUT/$b-$name.broker.log" >&2
			FAILED+=("$b-$name (broker exited)")
		fi
		stop_broker
	done
	if [ $ok = 1 ]; then
		PAIRS+=("$OUT/kraken-$name.json" "$OUT/baseline-$name.json")
	fi
done

if [ ${#PAIRS[@]} -gt 0 ]; then
	"$BIN/loadgen" table --names kraken,baseline "${PAIRS[@]}" >"$OUT/table.md"
	echo
	cat "$OUT/env.txt"
	echo
	cat "$OUT/table.md"
fi
if [ ${#FAILED[@]} -gt 0 ]; then
	echo "failed: ${FAILED[*]}" >&2
	exit 1
fi
