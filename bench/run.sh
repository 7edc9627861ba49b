#!/usr/bin/env bash
# Runs every load-generator scenario against kraken and the baseline broker,
# one fresh broker process per case, and prints one Markdown table:
# metric | kraken | baseline | ratio.
#
#   BENCH_SIZE=smoke|short|full bash bench/run.sh
#
# Reports go to bench/out/$BENCH_SIZE (override with BENCH_OUT); binaries to
# bench/bin (BENCH_KRAKEN_BIN=path uses a kraken built elsewhere).
# BENCH_ONLY="fanout latency-1" runs only the named cases.
#
# BENCH_ONLY=connect-http (not run by default) is the connect case of the
# size against kraken alone with three auth backends: the static token file,
# and bench/authsvc with each delay of BENCH_HTTP_DELAYS ("0ms 20ms"), for
# each token spread of BENCH_HTTP_TOKENS ("4 each": 4 shared tokens, a
# token per connection), BENCH_REPS (3) times; the table shows the medians.
# BENCH_HTTP_N overrides the number of connections.
#
# BENCH_ONLY=cluster (not run by default) is fanout and latency to N
# subscribers on one topic (smoke 300, else 9,000; BENCH_CLUSTER_N) from 3
# client processes, against each setup of BENCH_CLUSTER_SETUPS
# ("cluster-3 cluster-1 single"): cluster-K is K kraken nodes on one NATS
# server (bench/natsd), the subscribers spread evenly over the nodes and the
# publisher on node 1; single is one node with the local broker. BENCH_REPS
# (3) rounds; the table shows the medians, ratios against the last setup,
# and the NATS messages per publish counted on the NATS server.
# BENCH_MAX_DISTURBANCE=C takes the medians over the rounds in which other
# processes and the hypervisor (steal) took at most C cores.
#
# BENCH_ONLY=resume (not run by default) is kraken alone with
# RESUME_SESSIONS=true: N resumable sessions (smoke 300, short 20,000, full
# 100,000; BENCH_RESUME_N) parked in batches of BENCH_RESUME_BATCH (smoke
# 100, short 5,000, full 10,000) from 2 client processes, the broker's RSS
# and heap (its /metrics on ADMIN_ADDR=127.0.0.1:BENCH_ADMIN_PORT, default
# KPORT+1) sampled after each batch, then after RESUME_EXPIRY_SECONDS
# (BENCH_RESUME_EXPIRY: smoke 10, short 60, full 120, the default; it must
# outlast the parking of every batch), BENCH_RESUME_LINGER
# (smoke 2s, short 20s, full 60s) later and after a forced collection.
# BENCH_RESUME_MISSED=M publishes M messages per topic to the parked
# sessions; BENCH_RESUME_MAX_SESSIONS and BENCH_RESUME_MAX_BYTES set
# RESUME_MAX_SESSIONS and RESUME_MAX_BYTES (the run is then named
# resume-cap<N> / resume-bytes<B>); BENCH_RESUME_ARGS adds loadgen flags.
#
# BENCH_ONLY=store (not run by default) is kraken alone, the stream shape
# of 10 topics x 10 subscribers and 4 publishers, with the durable message
# store off (STORE_BACKEND=memory) and on (STORE_BACKEND=jetstream: the
# embedded JetStream under a fresh STORE_DIR each run), at each publish rate
# of BENCH_STORE_RATES (smoke "1000 40000", short "8000 40000 80000 120000",
# full "8000 20000 40000 80000 120000"; on 2 cores the highest saturates the
# broker with the store off, the two highest with it on) for
# BENCH_STORE_DURATION (smoke 1s, short 5s, full 10s). Every run has a
# fresh broker with ADMIN_ADDR=127.0.0.1:BENCH_ADMIN_PORT, whose /metrics
# gives the history's appended/dropped counts; the two settings alternate
# (in turn first) within each of BENCH_REPS (3; smoke 1) rounds, each run
# after a wait for a quiet machine (not at smoke size); the table shows the
# medians, their range and the ratio on/off.
# BENCH_MAX_DISTURBANCE=C also takes the medians over the quiet runs.
#
# The idle case runs three brokers, each fresh: kraken with WebSocket
# subscribers, kraken with MQTT 3.1.1 subscribers (kraken-mqtt:
# MQTT_ENABLED=true MQTT_PORT=BENCH_MQTT_PORT, default 18883; loadgen
# --transport mqtt, the publisher on WebSocket) and the baseline. The
# kraken-mqtt run is kraken's own table (idle-transports.md: WebSocket beside
# MQTT); BENCH_IDLE_MQTT=0 leaves it out.
#
# BENCH_ONLY=tls-idle (not run by default) is the RSS per idle connection
# over TLS and in the clear: bench/tlsidle opens BENCH_TLS_STEPS
# (1000,4000,7000,10000) connections to one fresh broker per setup of
# BENCH_TLS_SETUPS ("kraken-ws kraken-wss centrifugo-ws centrifugo-wss nats
# nats-tls"), each connecting, subscribing to 2 topics and going idle, and
# samples VmRSS and the goroutine count BENCH_TLS_SETTLE (3s) after each
# step (and, with BENCH_TLS_LINGER=130s, once more that long after the
# last step, past the runtime's periodic collection). One self-signed test
# CA and server certificate (ECDSA P-256) in $OUT/tls-idle/tls for every
# broker. Centrifugo (BENCH_CENTRIFUGO_BIN, else go install of
# centrifugo/v6 at BENCH_CENTRIFUGO_VERSION, v6.9.1) runs in insecure
# client mode (connect without a token) with its built-in TLS; nats-server
# (BENCH_NATS_SERVER_BIN, else built at go.mod's version) with TLS on its
# client port. Ports BENCH_TLS_PORT (28400) to +2. kraken's heap and
# goroutine profiles and /metrics at the end are saved beside the results.
set -euo pipefail

cd "$(dirname "$0")/.."
SIZE=${BENCH_SIZE:-short}
BIN=bench/bin
OUT=${BENCH_OUT:-bench/out/$SIZE}
KPORT=${BENCH_KRAKEN_PORT:-18080}
BPORT=${BENCH_BASELINE_PORT:-18090}
APORT=${BENCH_AUTHSVC_PORT:-18070}
ADPORT=${BENCH_ADMIN_PORT:-$((KPORT + 1))}
NPORT=${BENCH_NATS_PORT:-14222}
NHPORT=${BENCH_NATS_HTTP_PORT:-18222}
MPORT=${BENCH_MQTT_PORT:-18883}
mkdir -p "$BIN" "$OUT"
# ENVF describes the machine and the run; a summary-only pass of the
# cluster case keeps the one of the run that made the rounds.
ENVF=$OUT/env.txt
if [ "${BENCH_CLUSTER_SUMMARY_ONLY:-0}" = 1 ]; then
	ENVF=$OUT/env.summary.txt
fi

only() { [ -n "${BENCH_ONLY:-}" ] && [[ " $BENCH_ONLY " == *" $1 "* ]]; }

echo "building into $BIN" >&2
KRAKEN=${BENCH_KRAKEN_BIN:-$BIN/kraken}
if [ -z "${BENCH_KRAKEN_BIN:-}" ]; then
	go build -o "$BIN/kraken" ./cmd/kraken
fi
go build -o "$BIN/loadgen" ./bench/loadgen
go build -o "$BIN/baseline" ./bench/baseline
if only connect-http; then
	go build -o "$BIN/authsvc" ./bench/authsvc
fi
if only cluster; then
	go build -o "$BIN/natsd" ./bench/natsd
fi
if only tls-idle; then
	go build -o "$BIN/tlsidle" ./bench/tlsidle
fi

BROKER_PID=""
AUTHSVC_PID=""
# KRAKEN_AUTH is the auth setting kraken starts with; KRAKEN_EXTRA more
# settings of one case.
KRAKEN_AUTH=(AUTH_ALLOW_ALL=true)
KRAKEN_EXTRA=()

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

stop_authsvc() {
	if [ -n "$AUTHSVC_PID" ] && kill -0 "$AUTHSVC_PID" 2>/dev/null; then
		kill -TERM "$AUTHSVC_PID" 2>/dev/null || true
		wait "$AUTHSVC_PID" 2>/dev/null || true
	fi
	AUTHSVC_PID=""
}
# The cluster case's processes: the kraken nodes and the NATS server.
NODE_PIDS=()
NATSD_PID=""

# stop_pid PID: TERM, up to 15 s to exit, then KILL.
stop_pid() {
	local pid=$1
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 150); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			echo "process $pid did not stop; killing it" >&2
			kill -KILL "$pid" 2>/dev/null || true
		fi
		wait "$pid" 2>/dev/null || true
	fi
}

stop_cluster() {
	local pid
	for pid in "${NODE_PIDS[@]}"; do
		stop_pid "$pid"
	done
	NODE_PIDS=()
	stop_pid "$NATSD_PID"
	NATSD_PID=""
}
trap 'stop_broker; stop_authsvc; stop_cluster' EXIT
trap 'exit 130' INT TERM

# start_broker NAME LOGFILE: starts kraken or the baseline and waits until
# its port accepts connections.
# kraken-mqtt is kraken with its MQTT listener on MPORT too; it is ready
# once both ports accept connections.
start_broker() {
	local name=$1 log=$2 port ports
	port=$KPORT
	[ "$name" = baseline ] && port=$BPORT
	ports=("$port")
	[ "$name" = kraken-mqtt ] && ports+=("$MPORT")
	for p in "${ports[@]}"; do
		if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "port $p is already in use by another process; set BENCH_KRAKEN_PORT / BENCH_BASELINE_PORT / BENCH_MQTT_PORT" >&2
			return 1
		fi
	done
	case $name in
	kraken)
		env "${KRAKEN_AUTH[@]}" RATE_LIMIT=100000 WS_PORT=$KPORT LOG_LEVEL=warn "${KRAKEN_EXTRA[@]}" \
			"$KRAKEN" >"$log" 2>&1 &
		;;
	kraken-mqtt)
		env "${KRAKEN_AUTH[@]}" RATE_LIMIT=100000 WS_PORT=$KPORT LOG_LEVEL=warn MQTT_ENABLED=true MQTT_PORT=$MPORT \
			"${KRAKEN_EXTRA[@]}" "$KRAKEN" >"$log" 2>&1 &
		;;
	baseline)
		"$BIN/baseline" --addr "127.0.0.1:$BPORT" >"$log" 2>&1 &
		;;
	esac
	BROKER_PID=$!
	for p in "${ports[@]}"; do
		local up=0
		for _ in $(seq 100); do
			if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
				up=1
				break
			fi
			kill -0 "$BROKER_PID" 2>/dev/null || break
			sleep 0.1
		done
		if [ $up = 0 ]; then
			echo "$name did not start; see $log" >&2
			return 1
		fi
	done
	sleep 0.2
	# The ports must be ours: the broker must still be running.
	kill -0 "$BROKER_PID" 2>/dev/null && return 0
	echo "$name did not start; see $log" >&2
	return 1
}

# Cases: NAME SCENARIO LOADGEN-ARGS...
# HTTP_CONNECT is the connect case of the size, for connect-http.
case $SIZE in
smoke)
	HTTP_CONNECT="-n 200"
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
	HTTP_CONNECT="-n 5000 --procs 2"
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
	HTTP_CONNECT="-n 19000 --procs 2 --concurrency 64"
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
	if [ "${BENCH_IDLE_MQTT:-1}" != 0 ]; then
		echo "kraken-mqtt (idle): the same with MQTT_ENABLED=true MQTT_PORT=$MPORT; MQTT 3.1.1 subscribers (Clean Session 1, keep-alive 0, QoS 0), WebSocket publisher"
	fi
	if only connect-http; then
		echo "connect-http: kraken with AUTH_FILE (static) or AUTH_BACKEND=http against bench/authsvc, TOKEN_CACHE_SECONDS default; delays ${BENCH_HTTP_DELAYS:-0ms 20ms}; tokens ${BENCH_HTTP_TOKENS:-4 each}; ${BENCH_REPS:-3} repetitions"
	fi
} >"$ENVF"

FAILED=()
PAIRS=()
for c in "${CASES[@]}"; do
	read -r -a words <<<"$c"
	name=${words[0]}
	scenario=${words[1]}
	args=("${words[@]:2}")
	if [ -n "${BENCH_ONLY:-}" ] && ! only "$name"; then
		continue
	fi
	ok=1
	brokers=(kraken baseline)
	if [ "$scenario" = idle ] && [ "${BENCH_IDLE_MQTT:-1}" != 0 ]; then
		brokers=(kraken kraken-mqtt baseline)
	fi
	for b in "${brokers[@]}"; do
		port=$KPORT
		[ "$b" = baseline ] && port=$BPORT
		targs=()
		[ "$b" = kraken-mqtt ] && targs=(--transport mqtt --mqtt-addr "127.0.0.1:$MPORT")
		echo "== $name: $b ($scenario ${args[*]} ${targs[*]})" >&2
		rm -f "$OUT/$b-$name.json"
		if ! start_broker "$b" "$OUT/$b-$name.broker.log"; then
			FAILED+=("$b-$name")
			[ "$b" = kraken-mqtt ] || ok=0
			stop_broker
			continue
		fi
		if ! "$BIN/loadgen" --url "ws://127.0.0.1:$port/ws" --pid "$BROKER_PID" --label "$b" \
			--scenario "$scenario" "${args[@]}" "${targs[@]}" --json "$OUT/$b-$name.json" --md "$OUT/$b-$name.md" \
			>/dev/null 2> >(tee "$OUT/$b-$name.log" >&2); then
			FAILED+=("$b-$name")
			[ "$b" = kraken-mqtt ] || ok=0
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

# start_authsvc DELAY LOGFILE: starts bench/authsvc and waits for its port.
start_authsvc() {
	local delay=$1 log=$2
	if (exec 3<>"/dev/tcp/127.0.0.1/$APORT") 2>/dev/null; then
		echo "port $APORT is already in use by another process; set BENCH_AUTHSVC_PORT" >&2
		return 1
	fi
	"$BIN/authsvc" --addr "127.0.0.1:$APORT" --delay "$delay" --secret bench-secret >"$log" 2>&1 &
	AUTHSVC_PID=$!
	for _ in $(seq 100); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$APORT") 2>/dev/null; then
			kill -0 "$AUTHSVC_PID" 2>/dev/null && return 0
			break
		fi
		kill -0 "$AUTHSVC_PID" 2>/dev/null || break
		sleep 0.05
	done
	echo "authsvc did not start; see $log" >&2
	return 1
}

# connect-http: kraken alone, the connect case of the size, with the token
# file and with bench/authsvc at each delay; each token spread; BENCH_REPS
# rounds, the setups alternating within each round. Each run has a fresh
# kraken (so an empty token cache) and a fresh auth service.
HTTP_TABLES=()
if only connect-http; then
	read -r -a hargs <<<"$HTTP_CONNECT"
	if [ -n "${BENCH_HTTP_N:-}" ]; then
		hargs+=(-n "$BENCH_HTTP_N")
	fi
	hn=0
	for ((i = 0; i < ${#hargs[@]}; i++)); do
		[ "${hargs[i]}" = -n ] && hn=${hargs[i + 1]}
	done
	read -r -a delays <<<"${BENCH_HTTP_DELAYS:-0ms 20ms}"
	read -r -a spreads <<<"${BENCH_HTTP_TOKENS:-4 each}"
	reps=${BENCH_REPS:-3}
	HOUT=$OUT/connect-http
	mkdir -p "$HOUT"
	"$BIN/authsvc" tokens --n "$hn" >"$HOUT/tokens.json"
	setups=()
	for d in "${delays[@]}"; do setups+=("http-$d"); done
	setups+=(static)
	for ((rep = 1; rep <= reps; rep++)); do
		for sp in "${spreads[@]}"; do
			ntok=$sp
			[ "$sp" = each ] && ntok=$hn
			for su in "${setups[@]}"; do
				run=$su-tokens-$sp-r$rep
				echo "== connect-http $rep/$reps: $su, tokens $sp (${hargs[*]})" >&2
				rm -f "$HOUT/$run.json"
				stats=()
				if [ "$su" = static ]; then
					KRAKEN_AUTH=(AUTH_FILE="$HOUT/tokens.json")
				else
					if ! start_authsvc "${su#http-}" "$HOUT/$run.authsvc.log"; then
						FAILED+=("connect-http $run")
						continue
					fi
					KRAKEN_AUTH=(AUTH_BACKEND=http "AUTH_HTTP_URL=http://127.0.0.1:$APORT/v1/kraken" BACKEND_SECRET=bench-secret)
					stats=(--auth-stats "http://127.0.0.1:$APORT/stats")
				fi
				if start_broker kraken "$HOUT/$run.broker.log"; then
					if ! "$BIN/loadgen" --url "ws://127.0.0.1:$KPORT/ws" --pid "$BROKER_PID" --label "$su" \
						--scenario connect "${hargs[@]}" --token bench-tok --tokens "$ntok" "${stats[@]}" \
						--json "$HOUT/$run.json" --md "$HOUT/$run.md" \
						>/dev/null 2> >(tee "$HOUT/$run.log" >&2); then
						FAILED+=("connect-http $run")
					fi
					if ! kill -0 "$BROKER_PID" 2>/dev/null; then
						FAILED+=("connect-http $run (broker exited)")
					fi
				else
					FAILED+=("connect-http $run")
				fi
				stop_broker
				stop_authsvc
			done
		done
	done
	KRAKEN_AUTH=(AUTH_ALLOW_ALL=true)
	for sp in "${spreads[@]}"; do
		group=()
		for su in "${setups[@]}"; do
			runs=()
			for ((rep = 1; rep <= reps; rep++)); do
				[ -f "$HOUT/$su-tokens-$sp-r$rep.json" ] && runs+=("$HOUT/$su-tokens-$sp-r$rep.json")
			done
			if [ ${#runs[@]} -eq 0 ]; then
				group=()
				break
			fi
			"$BIN/loadgen" median --label "$su" --out "$HOUT/$su-tokens-$sp.json" "${runs[@]}"
			group+=("$HOUT/$su-tokens-$sp.json")
		done
		HTTP_TABLES+=("${group[@]}")
	done
	if [ ${#HTTP_TABLES[@]} -gt 0 ]; then
		names=$(
			IFS=,
			echo "${setups[*]}"
		)
		"$BIN/loadgen" table --names "$names" --spread "${HTTP_TABLES[@]}" >"$HOUT/table.md"
		"$BIN/loadgen" table --names "$names" --spread \
			--metrics connect_errors,connect_authsvc_calls_per_conn,connect_rate,connect_auth_p50,connect_auth_p99,connect_p50,connect_p99,connect_cpu_per_conn,connect_authsvc_cpu_per_conn,connect_authsvc_max_in_flight \
			"${HTTP_TABLES[@]}" >"$HOUT/summary.md"
	fi
fi

# port_open PORT: something accepts connections on 127.0.0.1:PORT.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# wait_port PID PORT: waits until PORT accepts connections while PID runs.
wait_port() {
	local pid=$1 port=$2
	for _ in $(seq 100); do
		if port_open "$port"; then
			kill -0 "$pid" 2>/dev/null && return 0
			return 1
		fi
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# start_cluster SETUP LOGPREFIX: starts the processes of one setup:
# cluster-K is bench/natsd and K kraken nodes n1..nK on ports KPORT..KPORT+K-1
# joined over it; single is one kraken with the local broker on KPORT.
start_cluster() {
	local setup=$1 log=$2 k i port
	k=0
	case $setup in
	single) ;;
	cluster-[1-9]*) k=${setup#cluster-} ;;
	*)
		echo "unknown cluster setup $setup (cluster-K or single)" >&2
		return 1
		;;
	esac
	for port in "$NPORT" "$NHPORT" $(seq "$KPORT" $((KPORT + (k > 0 ? k : 1) - 1))); do
		if port_open "$port"; then
			echo "port $port is already in use by another process; set BENCH_KRAKEN_PORT / BENCH_NATS_PORT / BENCH_NATS_HTTP_PORT" >&2
			return 1
		fi
	done
	if [ "$k" = 0 ]; then
		AUTH_ALLOW_ALL=true RATE_LIMIT=100000 WS_PORT=$KPORT LOG_LEVEL=warn ADMIN_ADDR=off \
			"$KRAKEN" >"$log.n1.broker.log" 2>&1 &
		NODE_PIDS+=($!)
		wait_port "$!" "$KPORT" || {
			echo "kraken did not start; see $log.n1.broker.log" >&2
			return 1
		}
		return 0
	fi
	local js=()
	[ "${BENCH_NATS_JETSTREAM:-0}" = 1 ] && js=(--jetstream)
	"$BIN/natsd" --addr "127.0.0.1:$NPORT" --http "127.0.0.1:$NHPORT" "${js[@]}" >"$log.natsd.log" 2>&1 &
	NATSD_PID=$!
	wait_port "$NATSD_PID" "$NHPORT" || {
		echo "natsd did not start; see $log.natsd.log" >&2
		return 1
	}
	for ((i = 1; i <= k; i++)); do
		port=$((KPORT + i - 1))
		AUTH_ALLOW_ALL=true RATE_LIMIT=100000 WS_PORT=$port LOG_LEVEL=warn ADMIN_ADDR=off \
			BROKER_BACKEND=nats NATS_URL="nats://127.0.0.1:$NPORT" NODE_ID=n$i \
			"$KRAKEN" >"$log.n$i.broker.log" 2>&1 &
		NODE_PIDS+=($!)
	done
	for ((i = 1; i <= k; i++)); do
		wait_port "${NODE_PIDS[i - 1]}" $((KPORT + i - 1)) || {
			echo "kraken n$i did not start; see $log.n$i.broker.log" >&2
			return 1
		}
	done
	"$BIN/natsd" wait --stats "http://127.0.0.1:$NHPORT/stats" --conns "$k" --timeout 10s
}

# busy_cores: the machine's CPU (percent of a core) over one second that
# was busy or taken by the hypervisor (steal), from /proc/stat.
busy_cores() {
	local a b
	read -r -a a < <(head -1 /proc/stat)
	sleep 1
	read -r -a b < <(head -1 /proc/stat)
	# cpu user nice system idle iowait irq softirq steal: all but idle and iowait.
	echo $(((b[1] + b[2] + b[3] + b[6] + b[7] + b[8]) - (a[1] + a[2] + a[3] + a[6] + a[7] + a[8])))
}

# wait_quiet LOG: waits (at most BENCH_QUIET_MAX seconds, default 60) until
# the machine's busy and stolen CPU over a second is below BENCH_QUIET
# percent of a core (default 30): other work on a shared machine, or on the
# host of this virtual machine, skews the figures. The wait and the last
# reading go to LOG.
wait_quiet() {
	local log=$1 limit=${BENCH_QUIET:-30} maxw=${BENCH_QUIET_MAX:-60} t0 busy
	t0=$SECONDS
	busy=$(busy_cores)
	while [ "$busy" -ge "$limit" ] && [ $((SECONDS - t0)) -lt "$maxw" ]; do
		busy=$(busy_cores)
	done
	echo "waited $((SECONDS - t0)) s for a quiet machine: ${busy}% of a core busy or stolen (limit ${limit}%)" >>"$log"
}

# resume: kraken alone, N resumable sessions parked in batches, until they
# expire; see the header.
RESUME_TABLE=""
if only resume; then
	case $SIZE in
	smoke) rn=300 rb=100 rexp=10 rlinger=2s rsettle=200ms ;;
	short) rn=20000 rb=5000 rexp=60 rlinger=20s rsettle=1s ;;
	full) rn=100000 rb=10000 rexp=120 rlinger=60s rsettle=2s ;;
	esac
	rn=${BENCH_RESUME_N:-$rn}
	rb=${BENCH_RESUME_BATCH:-$rb}
	rexp=${BENCH_RESUME_EXPIRY:-$rexp}
	rlinger=${BENCH_RESUME_LINGER:-$rlinger}
	rmissed=${BENCH_RESUME_MISSED:-0}
	name=resume
	KRAKEN_EXTRA=(RESUME_SESSIONS=true RESUME_EXPIRY_SECONDS="$rexp" ADMIN_ADDR="127.0.0.1:$ADPORT")
	if [ -n "${BENCH_RESUME_MAX_SESSIONS:-}" ]; then
		KRAKEN_EXTRA+=(RESUME_MAX_SESSIONS="$BENCH_RESUME_MAX_SESSIONS")
		name=$name-cap$BENCH_RESUME_MAX_SESSIONS
	fi
	if [ -n "${BENCH_RESUME_MAX_BYTES:-}" ]; then
		KRAKEN_EXTRA+=(RESUME_MAX_BYTES="$BENCH_RESUME_MAX_BYTES")
		name=$name-bytes$BENCH_RESUME_MAX_BYTES
	fi
	[ "$rmissed" != 0 ] && name=$name-missed$rmissed
	read -r -a rextra <<<"${BENCH_RESUME_ARGS:-}"
	echo "$name: kraken ${KRAKEN_EXTRA[*]}; $rn sessions in batches of $rb from 2 processes, $rmissed missed per topic, linger $rlinger" >>"$ENVF"
	echo "== $name: kraken ($rn sessions, batches of $rb, expiry ${rexp}s)" >&2
	rm -f "$OUT/kraken-$name.json"
	if port_open "$ADPORT"; then
		echo "port $ADPORT is already in use by another process; set BENCH_ADMIN_PORT" >&2
		FAILED+=("kraken-$name")
	elif start_broker kraken "$OUT/kraken-$name.broker.log"; then
		if "$BIN/loadgen" --url "ws://127.0.0.1:$KPORT/ws" --pid "$BROKER_PID" --label kraken \
			--scenario resume -n "$rn" --batch "$rb" --procs 2 --concurrency 64 --settle "$rsettle" \
			--expiry "${rexp}s" --linger "$rlinger" --force-gc --missed "$rmissed" \
			--metrics-url "http://127.0.0.1:$ADPORT/metrics" "${rextra[@]}" \
			--json "$OUT/kraken-$name.json" --md "$OUT/kraken-$name.md" \
			>/dev/null 2> >(tee "$OUT/kraken-$name.log" >&2); then
			RESUME_TABLE=$OUT/kraken-$name.md
		else
			FAILED+=("kraken-$name")
		fi
		if ! kill -0 "$BROKER_PID" 2>/dev/null; then
			echo "kraken exited during $name; see $OUT/kraken-$name.broker.log" >&2
			FAILED+=("kraken-$name (broker exited)")
		fi
	else
		FAILED+=("kraken-$name")
	fi
	stop_broker
	KRAKEN_EXTRA=()
fi

# wait_ready URL: waits (at most 15 s) until the broker's /ready answers 200.
wait_ready() {
	local url=$1
	for _ in $(seq 150); do
		curl -fs -o /dev/null --max-time 1 "$url" && return 0
		kill -0 "$BROKER_PID" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# store: kraken alone, the stream shape at each rate with the durable store
# off and on; see the header.
STORE_TABLES=()
if only store; then
	case $SIZE in
	smoke) srates="1000 40000" sdur=1s ;;
	short) srates="8000 40000 80000 120000" sdur=5s ;;
	full) srates="8000 20000 40000 80000 120000" sdur=10s ;;
	esac
	read -r -a srates <<<"${BENCH_STORE_RATES:-$srates}"
	sdur=${BENCH_STORE_DURATION:-$sdur}
	sshape=(--topics 10 --subs 10 --publishers 4)
	reps=${BENCH_REPS:-3}
	# smoke only checks that the case works: one round, and no waiting
	# for a quiet machine.
	sqmax=${BENCH_QUIET_MAX:-60}
	if [ "$SIZE" = smoke ]; then
		reps=${BENCH_REPS:-1}
		sqmax=${BENCH_QUIET_MAX:-0}
	fi
	SOUT=$OUT/store
	mkdir -p "$SOUT"
	rm -f "$SOUT/loadavg.txt"
	echo "store: kraken ADMIN_ADDR=127.0.0.1:$ADPORT STORE_BACKEND=memory | STORE_BACKEND=jetstream STORE_DIR=<fresh temp dir>; stream ${sshape[*]} --duration $sdur at ${srates[*]} publishes/s; $reps repetitions" >>"$ENVF"
	for ((rep = 1; rep <= reps; rep++)); do
		for ((ri = 0; ri < ${#srates[@]}; ri++)); do
			rate=${srates[ri]}
			# The settings take turns going first: from rate to rate, and
			# for each rate from round to round.
			order=(memory jetstream)
			if (((rep + ri) % 2 == 0)); then
				order=(jetstream memory)
			fi
			for su in "${order[@]}"; do
				run=$su-$rate-r$rep
				echo "== store $rep/$reps: $su, $rate publishes/s (${sshape[*]} --duration $sdur)" >&2
				rm -f "$SOUT/$run.json"
				printf '%s: ' "$run" >>"$SOUT/loadavg.txt"
				BENCH_QUIET_MAX=$sqmax wait_quiet "$SOUT/loadavg.txt"
				if port_open "$ADPORT"; then
					echo "port $ADPORT is already in use by another process; set BENCH_ADMIN_PORT" >&2
					FAILED+=("store $run")
					continue
				fi
				sdir=""
				KRAKEN_EXTRA=(ADMIN_ADDR="127.0.0.1:$ADPORT" STORE_BACKEND="$su")
				if [ "$su" = jetstream ]; then
					sdir=$(mktemp -d "${TMPDIR:-/tmp}/kraken-bench-store.XXXXXX")
					KRAKEN_EXTRA+=(STORE_DIR="$sdir")
				fi
				if start_broker kraken "$SOUT/$run.broker.log" && wait_ready "http://127.0.0.1:$ADPORT/ready"; then
					if ! "$BIN/loadgen" --url "ws://127.0.0.1:$KPORT/ws" --pid "$BROKER_PID" --cpu-pids "kraken=$BROKER_PID" \
						--label "$su" --scenario stream "${sshape[@]}" --rate "$rate" --duration "$sdur" \
						--metrics-url "http://127.0.0.1:$ADPORT/metrics" \
						--json "$SOUT/$run.json" --md "$SOUT/$run.md" \
						>/dev/null 2> >(tee "$SOUT/$run.log" >&2); then
						FAILED+=("store $run")
					fi
					if ! kill -0 "$BROKER_PID" 2>/dev/null; then
						echo "kraken exited during store $run; see $SOUT/$run.broker.log" >&2
						FAILED+=("store $run (broker exited)")
					fi
				else
					echo "kraken ($su) was not ready; see $SOUT/$run.broker.log" >&2
					FAILED+=("store $run")
				fi
				stop_broker
				if [ -n "$sdir" ]; then
					rm -rf "$sdir"
				fi
			done
		done
	done
	KRAKEN_EXTRA=()
	# store_tables SUFFIX MAXDIST: medians per setting and rate, over the
	# runs disturbed by at most MAXDIST cores (0 = all), table and summary.
	store_tables() {
		local suffix=$1 maxd=$2 rate su rep runs group tables=()
		for rate in "${srates[@]}"; do
			group=()
			for su in jetstream memory; do
				runs=()
				for ((rep = 1; rep <= reps; rep++)); do
					[ -f "$SOUT/$su-$rate-r$rep.json" ] && runs+=("$SOUT/$su-$rate-r$rep.json")
				done
				if [ ${#runs[@]} -eq 0 ]; then
					group=()
					break
				fi
				"$BIN/loadgen" median --label "$su" --max-disturbance "$maxd" --out "$SOUT/$su-$rate$suffix.json" "${runs[@]}"
				group+=("$SOUT/$su-$rate$suffix.json")
			done
			tables+=("${group[@]}")
		done
		[ ${#tables[@]} -gt 0 ] || return 1
		"$BIN/loadgen" table --names jetstream,memory --spread "${tables[@]}" >"$SOUT/table$suffix.md"
		"$BIN/loadgen" table --names jetstream,memory --spread --metrics "$STORE_SUMMARY" "${tables[@]}" >"$SOUT/summary$suffix.md"
	}
	STORE_SUMMARY=stream_offered_publishes,stream_publish_rate,stream_delivered_publishes,stream_rate,stream_lost,stream_p50,stream_p99
	STORE_SUMMARY+=,stream_broker_cores,stream_cpu_per_delivery,stream_loadgen_cores,stream_other_cores,stream_steal_cores
	STORE_SUMMARY+=,stream_history_appended,stream_history_per_publish,stream_history_dropped,stream_history_errors
	if store_tables "" 0; then
		STORE_TABLES+=("$SOUT/summary.md")
	fi
	if [ "${BENCH_MAX_DISTURBANCE:-0}" != 0 ] && store_tables .quiet "$BENCH_MAX_DISTURBANCE"; then
		STORE_TABLES+=("$SOUT/summary.quiet.md")
	fi
fi

# cluster: fanout and latency to CN subscribers from CPROCS client
# processes against each setup, BENCH_REPS rounds, the setups alternating
# within each round; every run has fresh brokers (and a fresh NATS server).
CLUSTER_TABLES=()
if only cluster; then
	CN=${BENCH_CLUSTER_N:-9000}
	CLAT=(--rate "${BENCH_CLUSTER_RATE:-5}" --duration "${BENCH_CLUSTER_DURATION:-20s}")
	if [ "$SIZE" = smoke ]; then
		CN=${BENCH_CLUSTER_N:-300}
		CLAT=(--rate "${BENCH_CLUSTER_RATE:-10}" --duration "${BENCH_CLUSTER_DURATION:-2s}")
	fi
	CPROCS=${BENCH_CLUSTER_PROCS:-3}
	CFAN=(--messages "${BENCH_CLUSTER_MESSAGES:-50}")
	# hop: one subscriber per client process (so one per node of
	# cluster-3) at a high rate: the latency of the hop through NATS itself.
	hop_default="--rate 1000 --duration 5s"
	read -r -a CHOP <<<"${BENCH_CLUSTER_HOP-$hop_default}"
	CCASES=("fanout fanout -n $CN ${CFAN[*]}" "latency latency -n $CN ${CLAT[*]}")
	if [ ${#CHOP[@]} -gt 0 ]; then
		CCASES+=("hop latency -n $CPROCS ${CHOP[*]}")
	fi
	read -r -a csetups <<<"${BENCH_CLUSTER_SETUPS:-cluster-3 cluster-1 single}"
	reps=${BENCH_REPS:-3}
	COUT=$OUT/cluster
	mkdir -p "$COUT"
	[ "${BENCH_CLUSTER_SUMMARY_ONLY:-0}" = 1 ] || rm -f "$COUT/loadavg.txt"
	echo "cluster: $CN subscribers on one topic from $CPROCS client processes; setups ${csetups[*]}; cases: $(printf '%s; ' "${CCASES[@]}")$reps repetitions; nodes LOG_LEVEL=warn AUTH_ALLOW_ALL=true RATE_LIMIT=100000 ADMIN_ADDR=off, cluster nodes BROKER_BACKEND=nats; NATS JetStream ${BENCH_NATS_JETSTREAM:-0}" >>"$ENVF"
	# BENCH_CLUSTER_SUMMARY_ONLY=1 only takes the medians and tables of
	# rounds already in COUT (say, with another BENCH_MAX_DISTURBANCE).
	first=1
	[ "${BENCH_CLUSTER_SUMMARY_ONLY:-0}" = 1 ] && first=$((reps + 1))
	for ((rep = first; rep <= reps; rep++)); do
		for su in "${csetups[@]}"; do
			run=$su-r$rep
			echo "== cluster $rep/$reps: $su ($CN subscribers)" >&2
			rm -f "$COUT/$run".*.json
			printf '%s: ' "$run" >>"$COUT/loadavg.txt"
			wait_quiet "$COUT/loadavg.txt"
			echo "$run before: $(cat /proc/loadavg)" >>"$COUT/loadavg.txt"
			if ! start_cluster "$su" "$COUT/$run"; then
				FAILED+=("cluster $run")
				stop_cluster
				continue
			fi
			urls=() cpids=() nstats=()
			for ((i = 0; i < ${#NODE_PIDS[@]}; i++)); do
				urls+=("ws://127.0.0.1:$((KPORT + i))/ws")
				cpids+=("n$((i + 1))=${NODE_PIDS[i]}")
			done
			if [ -n "$NATSD_PID" ]; then
				cpids+=("nats=$NATSD_PID")
				nstats=(--nats-stats "http://127.0.0.1:$NHPORT/stats")
			fi
			ulist=$(
				IFS=,
				echo "${urls[*]}"
			)
			plist=$(
				IFS=,
				echo "${cpids[*]}"
			)
			for c in "${CCASES[@]}"; do
				read -r -a words <<<"$c"
				sc=${words[0]}
				if ! "$BIN/loadgen" --url "${urls[0]}" --urls "$ulist" --procs "$CPROCS" --pid "${NODE_PIDS[0]}" \
					--cpu-pids "$plist" "${nstats[@]}" --label "$su" --scenario "${words[1]}" "${words[@]:2}" \
					--json "$COUT/$run.$sc.json" --md "$COUT/$run.$sc.md" \
					>/dev/null 2> >(tee "$COUT/$run.$sc.log" >&2); then
					FAILED+=("cluster $run $sc")
				fi
			done
			for ((i = 0; i < ${#NODE_PIDS[@]}; i++)); do
				kill -0 "${NODE_PIDS[i]}" 2>/dev/null || FAILED+=("cluster $run (n$((i + 1)) exited)")
			done
			echo "$run after: $(cat /proc/loadavg)" >>"$COUT/loadavg.txt"
			if [ -n "$NATSD_PID" ]; then
				"$BIN/natsd" stats --stats "http://127.0.0.1:$NHPORT/stats" >"$COUT/$run.natsd.txt" || true
			fi
			stop_cluster
		done
	done
	# cluster_tables SUFFIX MAXDIST: the medians of every setup and case
	# (<setup>.<case>SUFFIX.json, over the rounds disturbed by at most
	# MAXDIST cores of other processes and steal; 0 = all rounds),
	# table SUFFIX.md and summary SUFFIX.md.
	cluster_tables() {
		local suffix=$1 maxd=$2 c sc su rep names tables=() group runs
		for c in "${CCASES[@]}"; do
			sc=${c%% *}
			group=()
			for su in "${csetups[@]}"; do
				runs=()
				for ((rep = 1; rep <= reps; rep++)); do
					[ -f "$COUT/$su-r$rep.$sc.json" ] && runs+=("$COUT/$su-r$rep.$sc.json")
				done
				if [ ${#runs[@]} -eq 0 ]; then
					group=()
					break
				fi
				"$BIN/loadgen" median --label "$su" --max-disturbance "$maxd" --out "$COUT/$su.$sc$suffix.json" "${runs[@]}"
				group+=("$COUT/$su.$sc$suffix.json")
			done
			tables+=("${group[@]}")
		done
		[ ${#tables[@]} -gt 0 ] || return 1
		names=$(
			IFS=,
			echo "${csetups[*]}"
		)
		"$BIN/loadgen" table --names "$names" --spread "${tables[@]}" >"$COUT/table$suffix.md"
		"$BIN/loadgen" table --names "$names" --spread --metrics "$CLUSTER_SUMMARY" "${tables[@]}" >"$COUT/summary$suffix.md"
	}
	CLUSTER_SUMMARY=fanout_subscribers,fanout_lost,fanout_rate,fanout_last_max,fanout_cpu_per_delivery,fanout_broker_cores
	CLUSTER_SUMMARY+=,fanout_cores_n1,fanout_cores_n2,fanout_cores_n3,fanout_cores_nats,fanout_loadgen_cores,fanout_other_cores,fanout_steal_cores
	CLUSTER_SUMMARY+=,fanout_nats_remote_nodes,fanout_nats_in_per_publish,fanout_nats_out_per_publish,fanout_nats_out_remote_per_publish
	CLUSTER_SUMMARY+=,fanout_nats_echo_per_publish,fanout_nats_out_n1,fanout_nats_out_n2,fanout_nats_out_n3
	CLUSTER_SUMMARY+=,fanout_url1_last_max,fanout_url2_last_max,fanout_url3_last_max
	CLUSTER_SUMMARY+=,latency_rate,latency_lost,latency_last_p50,latency_last_p99,latency_all_p50,latency_all_p99
	CLUSTER_SUMMARY+=,latency_url1_last_p99,latency_url2_last_p99,latency_url3_last_p99,latency_url1_all_p50,latency_url2_all_p50,latency_url3_all_p50
	CLUSTER_SUMMARY+=,latency_cpu_per_delivery,latency_cores_n1,latency_cores_n2,latency_cores_n3,latency_cores_nats,latency_loadgen_cores
	CLUSTER_SUMMARY+=,latency_other_cores,latency_steal_cores,latency_nats_in_per_publish,latency_nats_out_per_publish
	CLUSTER_SUMMARY+=,latency_nats_out_remote_per_publish,latency_nats_echo_per_publish
	if cluster_tables "" 0; then
		CLUSTER_TABLES+=("$COUT/summary.md")
	fi
	if [ "${BENCH_MAX_DISTURBANCE:-0}" != 0 ] && cluster_tables .quiet "$BENCH_MAX_DISTURBANCE"; then
		CLUSTER_TABLES+=("$COUT/summary.quiet.md")
	fi
fi

# tls-idle: one fresh broker per setup, bench/tlsidle against it, one table.
TLS_TABLE=""
if only tls-idle; then
	TOUT=$OUT/tls-idle
	mkdir -p "$TOUT/tls"
	TDIR=$(cd "$TOUT/tls" && pwd)
	"$BIN/tlsidle" gencert -dir "$TDIR"
	TP=${BENCH_TLS_PORT:-28400}
	read -r -a tsetups <<<"${BENCH_TLS_SETUPS:-kraken-ws kraken-wss centrifugo-ws centrifugo-wss nats nats-tls}"
	CENTRIFUGO=${BENCH_CENTRIFUGO_BIN:-$BIN/centrifugo}
	NATS_SERVER=${BENCH_NATS_SERVER_BIN:-$BIN/nats-server}
	if [[ " ${tsetups[*]} " == *" centrifugo"* ]] && [ ! -x "$CENTRIFUGO" ]; then
		echo "installing centrifugo ${BENCH_CENTRIFUGO_VERSION:-v6.9.1} into $BIN (several minutes)" >&2
		GOFLAGS=-mod=mod GOBIN=$PWD/$BIN go install "github.com/centrifugal/centrifugo/v6@${BENCH_CENTRIFUGO_VERSION:-v6.9.1}"
	fi
	if [[ " ${tsetups[*]} " == *" nats"* ]] && [ ! -x "$NATS_SERVER" ]; then
		go build -o "$NATS_SERVER" github.com/nats-io/nats-server/v2
	fi
	cat >"$TOUT/nats.conf" <<EOF
listen: 127.0.0.1:$TP
http: 127.0.0.1:$((TP + 1))
prof_port: $((TP + 2))
max_connections: 100000
EOF
	cat >"$TOUT/nats-tls.conf" <<EOF
include nats.conf
tls {
  cert_file: "$TDIR/cert.pem"
  key_file: "$TDIR/key.pem"
  timeout: 5
}
EOF
	for tlson in false true; do
		cat >"$TOUT/centrifugo-$tlson.json" <<EOF
{
  "client": {"insecure": true, "allowed_origins": ["*"]},
  "http_server": {"address": "127.0.0.1", "port": $TP, "internal_address": "127.0.0.1", "internal_port": "$((TP + 1))",
    "tls": {"enabled": $tlson, "cert_pem": "$TDIR/cert.pem", "key_pem": "$TDIR/key.pem"}},
  "prometheus": {"enabled": true},
  "log": {"level": "warn"}
}
EOF
	done
	{
		echo "tls-idle: steps ${BENCH_TLS_STEPS:-1000,4000,7000,10000}, settle ${BENCH_TLS_SETTLE:-3s}"
		if [ -x "$CENTRIFUGO" ]; then
			echo "tls-idle centrifugo: module ${BENCH_CENTRIFUGO_VERSION:-v6.9.1} ($("$CENTRIFUGO" version 2>&1 | head -1))"
		fi
		if [ -x "$NATS_SERVER" ]; then
			echo "tls-idle nats-server: $("$NATS_SERVER" --version 2>&1 | head -1)"
		fi
	} >>"$ENVF"
	tfiles=()
	for su in "${tsetups[@]}"; do
		for p in "$TP" $((TP + 1)) $((TP + 2)); do
			if port_open "$p"; then
				echo "port $p is already in use by another process; set BENCH_TLS_PORT" >&2
				FAILED+=("tls-idle $su")
				continue 2
			fi
		done
		targs=(--steps "${BENCH_TLS_STEPS:-1000,4000,7000,10000}" --settle "${BENCH_TLS_SETTLE:-3s}" --cafile "$TDIR/ca.pem"
			--linger "${BENCH_TLS_LINGER:-0s}"
			--label "$su" --json "$TOUT/$su.json" --out "$TOUT")
		log=$TOUT/$su.broker.log
		case $su in
		kraken-ws | kraken-wss)
			tenv=(AUTH_ALLOW_ALL=true RATE_LIMIT=100000 WS_PORT=$TP ADMIN_ADDR=127.0.0.1:$((TP + 1)) LOG_LEVEL=warn)
			url=ws://127.0.0.1:$TP/ws
			if [ "$su" = kraken-wss ]; then
				tenv+=(WSS_PORT=$((TP + 2)) TLS_CERT_FILE=$TDIR/cert.pem TLS_KEY_FILE=$TDIR/key.pem)
				url=wss://127.0.0.1:$((TP + 2))/ws
			fi
			env "${tenv[@]}" "$KRAKEN" >"$log" 2>&1 &
			admin=http://127.0.0.1:$((TP + 1))
			targs+=(--broker kraken --url "$url" --goroutines "$admin/metrics"
				--dump "$admin/debug/pprof/heap,$admin/debug/pprof/goroutine?debug=1,$admin/metrics")
			;;
		centrifugo-ws | centrifugo-wss)
			tlson=false scheme=ws
			[ "$su" = centrifugo-wss ] && tlson=true scheme=wss
			"$CENTRIFUGO" -c "$TOUT/centrifugo-$tlson.json" >"$log" 2>&1 &
			targs+=(--broker centrifugo --token "" --url "$scheme://127.0.0.1:$TP/connection/websocket"
				--goroutines "${scheme/ws/http}://127.0.0.1:$((TP + 1))/metrics")
			;;
		nats | nats-tls)
			"$NATS_SERVER" -c "$TOUT/$su.conf" >"$log" 2>&1 &
			scheme=nats
			[ "$su" = nats-tls ] && scheme=tls
			targs+=(--broker nats --url "$scheme://127.0.0.1:$TP"
				--goroutines "http://127.0.0.1:$((TP + 2))/debug/pprof/goroutine?debug=1")
			;;
		*)
			echo "unknown tls-idle setup $su" >&2
			FAILED+=("tls-idle $su")
			continue
			;;
		esac
		BROKER_PID=$!
		echo "== tls-idle: $su" >&2
		rm -f "$TOUT/$su.json"
		if wait_port "$BROKER_PID" "$TP" && sleep 1; then
			if ! "$BIN/tlsidle" --pid "$BROKER_PID" "${targs[@]}" >"$TOUT/$su.txt" 2> >(tee "$TOUT/$su.log" >&2); then
				FAILED+=("tls-idle $su")
			fi
			kill -0 "$BROKER_PID" 2>/dev/null || FAILED+=("tls-idle $su (broker exited)")
		else
			echo "$su did not start; see $log" >&2
			FAILED+=("tls-idle $su")
		fi
		stop_broker
		if [ -f "$TOUT/$su.json" ]; then
			tfiles+=("$TOUT/$su.json")
		fi
	done
	if [ ${#tfiles[@]} -gt 0 ]; then
		"$BIN/tlsidle" table "${tfiles[@]}" >"$TOUT/table.md"
		TLS_TABLE=$TOUT/table.md
	fi
fi

if [ ${#PAIRS[@]} -gt 0 ]; then
	"$BIN/loadgen" table --names kraken,baseline "${PAIRS[@]}" >"$OUT/table.md"
fi
# idle-transports: kraken's idle figures over MQTT against WebSocket, the
# two runs of this one build.
IDLE_TABLE=""
if [ -f "$OUT/kraken-mqtt-idle.json" ] && [ -f "$OUT/kraken-idle.json" ]; then
	IDLE_METRICS=idle_connections,idle_rss_baseline,idle_rss_slope,idle_rss_intercept,idle_rss_per_conn
	IDLE_METRICS+=,idle_kernel_broker_slope,idle_total_per_conn,idle_threads,idle_connect_errors,idle_missed,idle_disconnects
	# WebSocket first: the table takes its title from its first report.
	"$BIN/loadgen" table --names websocket,mqtt --metrics "$IDLE_METRICS" \
		"$OUT/kraken-idle.json" "$OUT/kraken-mqtt-idle.json" >"$OUT/idle-transports.md"
	IDLE_TABLE=$OUT/idle-transports.md
fi
if [ ${#PAIRS[@]} -gt 0 ] || [ ${#HTTP_TABLES[@]} -gt 0 ] || [ ${#CLUSTER_TABLES[@]} -gt 0 ] || [ ${#STORE_TABLES[@]} -gt 0 ] || [ -n "$RESUME_TABLE" ] || [ -n "$TLS_TABLE" ]; then
	echo
	cat "$ENVF"
fi
if [ ${#PAIRS[@]} -gt 0 ]; then
	echo
	cat "$OUT/table.md"
fi
if [ -n "$IDLE_TABLE" ]; then
	echo
	echo "idle: kraken with MQTT 3.1.1 subscribers against WebSocket ones (one fresh broker each, this build)"
	echo
	cat "$IDLE_TABLE"
fi
if [ ${#HTTP_TABLES[@]} -gt 0 ]; then
	echo
	echo "connect-http: medians of $reps runs (range in brackets); every metric in $HOUT/table.md"
	echo
	cat "$HOUT/summary.md"
fi
if [ ${#CLUSTER_TABLES[@]} -gt 0 ]; then
	echo
	echo "cluster: medians of $reps rounds (range in brackets); every metric in $COUT/table.md"
	echo
	cat "$COUT/summary.md"
	if [ -f "$COUT/summary.quiet.md" ] && [ "${BENCH_MAX_DISTURBANCE:-0}" != 0 ]; then
		echo
		echo "cluster: medians of the rounds in which other processes and steal took at most $BENCH_MAX_DISTURBANCE cores (how many: see the notes); every metric in $COUT/table.quiet.md"
		echo
		cat "$COUT/summary.quiet.md"
	fi
fi
if [ ${#STORE_TABLES[@]} -gt 0 ]; then
	echo
	echo "store: medians of $reps rounds (range in brackets), STORE_BACKEND=jetstream against memory; every metric in $SOUT/table.md"
	echo
	cat "$SOUT/summary.md"
	if [ -f "$SOUT/summary.quiet.md" ] && [ "${BENCH_MAX_DISTURBANCE:-0}" != 0 ]; then
		echo
		echo "store: medians of the runs in which other processes and steal took at most $BENCH_MAX_DISTURBANCE cores (how many: see the notes); every metric in $SOUT/table.quiet.md"
		echo
		cat "$SOUT/summary.quiet.md"
	fi
fi
if [ -n "$RESUME_TABLE" ]; then
	echo
	echo "resume: kraken alone; $RESUME_TABLE"
	echo
	cat "$RESUME_TABLE"
fi
if [ -n "$TLS_TABLE" ]; then
	echo
	echo "tls-idle: one fresh broker per setup; samples in $TOUT/<setup>.json"
	echo
	cat "$TLS_TABLE"
fi
if [ ${#FAILED[@]} -gt 0 ]; then
	echo "failed: ${FAILED[*]}" >&2
	exit 1
fi
