#!/usr/bin/env bash
# Object-store servers for fdl's tests, on 127.0.0.1 only:
#   versitygw v1.8.0 (S3, Go module proxy) and Azurite 3.37.0 (Azure Blob, npm).
#
#   scripts/test-servers.sh install   install both into $FDL_TOOLS (idempotent)
#   scripts/test-servers.sh start     start both, wait until they answer, write
#                                     $FDL_TOOLS/servers.env (source it) and print it
#   scripts/test-servers.sh stop      stop the servers this script started
#
# The tests find the servers through FDL_TEST_S3_URL and FDL_TEST_AZURE_URL
# (see internal/store/cloudtest). Credentials are test-only values of local
# servers: versitygw's root key set here, Azurite's documented dev account.
set -euo pipefail

FDL_TOOLS=${FDL_TOOLS:-$HOME/.cache/fdl-ci}
S3_PORT=${FDL_S3_PORT:-7070}
AZ_PORT=${FDL_AZURE_PORT:-10000}
VERSITYGW_VERSION=v1.8.0
AZURITE_VERSION=3.37.0
S3_KEY=fdltest
S3_SECRET=fdltest-secret-not-for-production
# Azurite's well-known development account (public, documented by Microsoft).
AZ_ACCOUNT=devstoreaccount1
AZ_KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='

mkdir -p "$FDL_TOOLS"
GOBIN_DIR=$FDL_TOOLS/bin
VERSITYGW=$GOBIN_DIR/versitygw
AZURITE_DIR=$FDL_TOOLS/azurite

install() {
	if [[ ! -x $VERSITYGW ]]; then
		echo "installing versitygw $VERSITYGW_VERSION (Go module proxy, ~3 min cold)" >&2
		GOBIN=$GOBIN_DIR go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
	fi
	if [[ ! -f $AZURITE_DIR/node_modules/azurite/dist/src/blob/main.js ]]; then
		echo "installing Azurite $AZURITE_VERSION (npm, ~2 min cold)" >&2
		mkdir -p "$AZURITE_DIR"
		(cd "$AZURITE_DIR" && npm install --no-audit --no-fund --loglevel=error "azurite@$AZURITE_VERSION" >&2)
	fi
}

wait_port() { # wait_port PORT NAME LOG
	for _ in $(seq 1 150); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
			return 0
		fi
		sleep 0.2
	done
	echo "$2 did not start on 127.0.0.1:$1; its log:" >&2
	cat "$3" >&2 || true
	return 1
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start() {
	install
	for p in "$S3_PORT" "$AZ_PORT"; do
		if port_busy "$p"; then
			echo "127.0.0.1:$p is already in use: stop what listens there (or '$0 stop'), or set FDL_S3_PORT / FDL_AZURE_PORT" >&2
			return 1
		fi
	done
	local data=$FDL_TOOLS/data
	rm -rf "$data"
	mkdir -p "$data/s3" "$data/azure"
	ROOT_ACCESS_KEY=$S3_KEY ROOT_SECRET_KEY=$S3_SECRET \
		nohup "$VERSITYGW" --port "127.0.0.1:$S3_PORT" --quiet posix "$data/s3" \
		>"$FDL_TOOLS/versitygw.log" 2>&1 &
	echo $! >"$FDL_TOOLS/versitygw.pid"
	nohup node "$AZURITE_DIR/node_modules/azurite/dist/src/blob/main.js" --blobHost 127.0.0.1 --blobPort "$AZ_PORT" \
		--location "$data/azure" --silent --skipApiVersionCheck \
		>"$FDL_TOOLS/azurite.log" 2>&1 &
	echo $! >"$FDL_TOOLS/azurite.pid"
	wait_port "$S3_PORT" versitygw "$FDL_TOOLS/versitygw.log"
	wait_port "$AZ_PORT" Azurite "$FDL_TOOLS/azurite.log"
	cat >"$FDL_TOOLS/servers.env" <<EOF
export FDL_TEST_S3_URL='s3://fdl-test?endpoint=http://127.0.0.1:$S3_PORT&region=us-east-1&use_path_style=true'
export AWS_ACCESS_KEY_ID='$S3_KEY'
export AWS_SECRET_ACCESS_KEY='$S3_SECRET'
export AWS_REGION='us-east-1'
export AWS_EC2_METADATA_DISABLED=true
export FDL_TEST_AZURE_URL='azblob://fdl-test'
export AZURE_STORAGE_CONNECTION_STRING='DefaultEndpointsProtocol=http;AccountName=$AZ_ACCOUNT;AccountKey=$AZ_KEY;BlobEndpoint=http://127.0.0.1:$AZ_PORT/$AZ_ACCOUNT;'
EOF
	cat "$FDL_TOOLS/servers.env"
}

stop() {
	for name in versitygw azurite; do
		local pidfile=$FDL_TOOLS/$name.pid
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
