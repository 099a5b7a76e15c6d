#!/usr/bin/env bash
# Object-store servers for fdl's tests, on 127.0.0.1 only:
#   versitygw v1.8.0 (S3, Go module proxy) and Azurite 3.37.0 (Azure Blob, npm).
#
#   scripts/test-servers.sh install   install both into $FDL_TOOLS (idempotent)
#   scripts/test-servers.sh start     start both, wait until they answer, write
#                                     $FDL_SERVERS_DIR/servers.env and print it
#   scripts/test-servers.sh stop      stop the servers started with this $FDL_SERVERS_DIR
#
# FDL_TOOLS (default ~/.cache/fdl-ci) caches the installed servers.
# FDL_SERVERS_DIR (default $FDL_TOOLS/run) holds one set of running servers:
# their data, logs, pids and servers.env. Each set picks free ports (from
# 7070 and 10000 up, or FDL_S3_PORT / FDL_AZURE_PORT), so several sets (a
# developer's and a .ci/run) never stop each other's servers.
#
# The tests find the servers through FDL_TEST_S3_URL and FDL_TEST_AZURE_URL
# (see internal/store/cloudtest). Credentials are test-only values of local
# servers: versitygw's root key set here, Azurite's documented dev account.
set -euo pipefail

FDL_TOOLS=${FDL_TOOLS:-$HOME/.cache/fdl-ci}
RUN=${FDL_SERVERS_DIR:-$FDL_TOOLS/run}
VERSITYGW_VERSION=v1.8.0
AZURITE_VERSION=3.37.0
S3_KEY=fdltest
S3_SECRET=fdltest-secret-not-for-production
# Azurite's well-known development account (public, documented by Microsoft).
AZ_ACCOUNT=devstoreaccount1
AZ_KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='

VERSITYGW=$FDL_TOOLS/bin/versitygw
AZURITE_DIR=$FDL_TOOLS/azurite
AZURITE_MAIN=$AZURITE_DIR/node_modules/azurite/dist/src/blob/main.js

install() {
	mkdir -p "$FDL_TOOLS"
	if [[ ! -x $VERSITYGW ]]; then
		echo "installing versitygw $VERSITYGW_VERSION (Go module proxy, ~3 min cold)" >&2
		GOBIN=$FDL_TOOLS/bin go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
	fi
	if [[ ! -f $AZURITE_MAIN ]]; then
		echo "installing Azurite $AZURITE_VERSION (npm, ~2 min cold)" >&2
		mkdir -p "$AZURITE_DIR"
		(cd "$AZURITE_DIR" && npm install --no-audit --no-fund --loglevel=error "azurite@$AZURITE_VERSION" >&2)
	fi
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_port FIRST: the first port from FIRST up that nothing listens on.
free_port() {
	local p=$1
	while port_busy "$p"; do
		p=$((p + 1))
		if ((p > $1 + 200)); then
			echo "no free port in $1..$p" >&2
			return 1
		fi
	done
	echo "$p"
}

wait_port() { # wait_port PORT NAME LOG PID
	for _ in $(seq 1 150); do
		if ! kill -0 "$4" 2>/dev/null; then
			break
		fi
		if port_busy "$1"; then
			return 0
		fi
		sleep 0.2
	done
	echo "$2 did not start on 127.0.0.1:$1; its log:" >&2
	cat "$3" >&2 || true
	return 1
}

running() { [[ -f $RUN/$1.pid ]] && kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null; }

start() {
	install
	if running versitygw || running azurite; then
		echo "servers of $RUN are already running: '$0 stop' first, or set FDL_SERVERS_DIR" >&2
		return 1
	fi
	local s3_port az_port
	if [[ -n ${FDL_S3_PORT:-} ]]; then
		s3_port=$FDL_S3_PORT
		! port_busy "$s3_port" || { echo "127.0.0.1:$s3_port is in use" >&2; return 1; }
	else
		s3_port=$(free_port 7070)
	fi
	if [[ -n ${FDL_AZURE_PORT:-} ]]; then
		az_port=$FDL_AZURE_PORT
		! port_busy "$az_port" || { echo "127.0.0.1:$az_port is in use" >&2; return 1; }
	else
		az_port=$(free_port 10000)
	fi
	rm -rf "$RUN/data"
	mkdir -p "$RUN/data/s3" "$RUN/data/azure"
	ROOT_ACCESS_KEY=$S3_KEY ROOT_SECRET_KEY=$S3_SECRET \
		nohup "$VERSITYGW" --port "127.0.0.1:$s3_port" --quiet posix "$RUN/data/s3" \
		>"$RUN/versitygw.log" 2>&1 &
	echo $! >"$RUN/versitygw.pid"
	nohup node "$AZURITE_MAIN" --blobHost 127.0.0.1 --blobPort "$az_port" \
		--location "$RUN/data/azure" --silent --skipApiVersionCheck \
		>"$RUN/azurite.log" 2>&1 &
	echo $! >"$RUN/azurite.pid"
	wait_port "$s3_port" versitygw "$RUN/versitygw.log" "$(cat "$RUN/versitygw.pid")"
	wait_port "$az_port" Azurite "$RUN/azurite.log" "$(cat "$RUN/azurite.pid")"
	cat >"$RUN/servers.env" <<EOF
export FDL_TEST_S3_URL='s3://fdl-test?endpoint=http://127.0.0.1:$s3_port&region=us-east-1&use_path_style=true'
export AWS_ACCESS_KEY_ID='$S3_KEY'
export AWS_SECRET_ACCESS_KEY='$S3_SECRET'
export AWS_REGION='us-east-1'
export AWS_EC2_METADATA_DISABLED=true
export FDL_TEST_AZURE_URL='azblob://fdl-test'
export AZURE_STORAGE_CONNECTION_STRING='DefaultEndpointsProtocol=http;AccountName=$AZ_ACCOUNT;AccountKey=$AZ_KEY;BlobEndpoint=http://127.0.0.1:$az_port/$AZ_ACCOUNT;'
EOF
	cat "$RUN/servers.env"
}

stop() {
	for name in versitygw azurite; do
		local pidfile=$RUN/$name.pid
		if [[ -f $pidfile ]]; then
			local pid
			pid=$(cat "$pidfile")
			kill "$pid" 2>/dev/null || true
			for _ in $(seq 1 25); do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.2
			done
			kill -9 "$pid" 2>/dev/null || true # Azurite may ignore SIGTERM
			rm -f "$pidfile"
		fi
	done
}

case "${1:-}" in
install) install ;;
start) start ;;
stop) stop ;;
*)
	echo "usage: $0 install|start|stop" >&2
	exit 2
	;;
esac
