#!/usr/bin/env bash
# The project's PostgreSQL and Redis on loopback, started the same way by developers, CI
# (.ci/run) and the benchmarks (npm run bench). See README, "Running on PostgreSQL and Redis".
#
#   scripts/services.sh up        install what is missing (Debian packages), start both, create
#                                 the role the tests and benchmarks log in with
#   scripts/services.sh env       print DATABASE_URL, BENCH_POSTGRES_URL and REDIS_URL to eval
#   scripts/services.sh createdb  create a fresh database and print its URL
#   scripts/services.sh dropdb N  drop database N
#   scripts/services.sh status    say what answers
#   scripts/services.sh down      stop what `up` started (a server already running is left alone)
#
# PostgreSQL: Debian's cluster on 127.0.0.1:5432 (PG_PORT). Debian refuses passwordless TCP
# logins, so `up` gives the role agentgov (PG_USER) a password (PG_PASSWORD) and the URLs carry
# it. The role may create databases: each test run and benchmark makes its own.
# Redis: 127.0.0.1:6379 (REDIS_PORT), no persistence: it holds counters and events only.
set -euo pipefail

PG_PORT="${PG_PORT:-5432}"
PG_USER="${PG_USER:-agentgov}"
PG_PASSWORD="${PG_PASSWORD:-agentgov}"
REDIS_PORT="${REDIS_PORT:-6379}"
STATE_DIR="${SERVICES_STATE_DIR:-${TMPDIR:-/tmp}/agentgov-services}"

say() { printf 'services: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

as_postgres() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else sudo -u postgres "$@"; fi
}

apt_install() {
  say "installing $* from Debian's packages"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

server_url() { printf 'postgres://%s:%s@127.0.0.1:%s' "$PG_USER" "$PG_PASSWORD" "$PG_PORT"; }

pg_answers() { pg_isready -h 127.0.0.1 -p "$PG_PORT" -q 2>/dev/null; }
redis_answers() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG; }

wait_for() {
  local what="$1" check="$2"
  for _ in $(seq 1 60); do "$check" && return 0; sleep 0.5; done
  die "$what did not answer within 30 s"
}

pg_bin_version() {
  ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -n 1
}

ensure_packages() {
  local missing=()
  command -v redis-server >/dev/null || missing+=(redis-server)
  [ -n "$(pg_bin_version)" ] || missing+=(postgresql)
  if [ "${#missing[@]}" -gt 0 ]; then apt_install "${missing[@]}"; fi
}

start_postgres() {
  if pg_answers; then say "PostgreSQL already answers on 127.0.0.1:$PG_PORT"; return; fi
  local version cluster
  version="$(pg_bin_version)"
  cluster="$(pg_lsclusters -h 2>/dev/null | awk -v p="$PG_PORT" '$3 == p { print $1 " " $2; exit }')"
  if [ -z "$cluster" ]; then
    say "creating PostgreSQL $version cluster 'agentgov' on port $PG_PORT"
    as_root pg_createcluster "$version" agentgov --port "$PG_PORT" >/dev/null
    cluster="$version agentgov"
  fi
  say "starting PostgreSQL cluster $cluster"
  # Tests open many short connections in parallel; the default 100 is too tight for two suites.
  as_root pg_ctlcluster --skip-systemctl-redirect $cluster start -o "-c max_connections=300 -c listen_addresses=127.0.0.1"
  touch "$STATE_DIR/postgres.started"
  echo "$cluster" >"$STATE_DIR/postgres.cluster"
  wait_for PostgreSQL pg_answers
}

# Creates or updates the login role through the local socket as the postgres superuser (peer
# authentication, which Debian allows), so no password of the superuser is ever needed.
ensure_role() {
  local sql="DO \$\$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$PG_USER') THEN
      CREATE ROLE $PG_USER LOGIN CREATEDB PASSWORD '$PG_PASSWORD';
    ELSE
      ALTER ROLE $PG_USER LOGIN CREATEDB PASSWORD '$PG_PASSWORD';
    END IF;
  END \$\$;"
  if as_postgres psql -q -p "$PG_PORT" -d postgres -c "$sql" >/dev/null 2>&1; then return; fi
  # A server that is not Debian's cluster (a container, another host's socket): its postgres
  # role may log in over TCP without a password.
  psql -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -c "$sql" >/dev/null ||
    die "could not create the role $PG_USER: neither the postgres OS user nor postgres over TCP could log in"
}

start_redis() {
  if redis_answers; then say "Redis already answers on 127.0.0.1:$REDIS_PORT"; return; fi
  say "starting Redis on 127.0.0.1:$REDIS_PORT"
  redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save '' --appendonly no \
    --pidfile "$STATE_DIR/redis.pid" --logfile "$STATE_DIR/redis.log"
  touch "$STATE_DIR/redis.started"
  wait_for Redis redis_answers
}

cmd_up() {
  mkdir -p "$STATE_DIR"
  ensure_packages
  start_postgres
  ensure_role
  start_redis
  PGPASSWORD="$PG_PASSWORD" psql -q -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" -d postgres -c 'SELECT 1' >/dev/null ||
    die "the role $PG_USER cannot log in over TCP with its password (pg_hba.conf?)"
  say "PostgreSQL $(server_url | sed 's/:[^:@]*@/:***@/') and Redis redis://127.0.0.1:$REDIS_PORT are up"
}

cmd_env() {
  printf 'export DATABASE_URL=%q\n' "$(server_url)/postgres"
  printf 'export BENCH_POSTGRES_URL=%q\n' "$(server_url)/postgres"
  printf 'export REDIS_URL=%q\n' "redis://127.0.0.1:$REDIS_PORT"
}

cmd_createdb() {
  local name="${1:-agentgov_$(date +%s)_$$}"
  PGPASSWORD="$PG_PASSWORD" createdb -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" "$name"
  printf '%s/%s\n' "$(server_url)" "$name"
}

cmd_dropdb() {
  [ -n "${1:-}" ] || die "dropdb needs a database name"
  PGPASSWORD="$PG_PASSWORD" dropdb -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" --if-exists --force "$1"
}

cmd_status() {
  if pg_answers; then say "PostgreSQL answers on 127.0.0.1:$PG_PORT"; else say "PostgreSQL does not answer"; fi
  if redis_answers; then say "Redis answers on 127.0.0.1:$REDIS_PORT"; else say "Redis does not answer"; fi
}

cmd_down() {
  if [ -f "$STATE_DIR/redis.started" ]; then
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
    rm -f "$STATE_DIR/redis.started"
    say "Redis stopped"
  fi
  if [ -f "$STATE_DIR/postgres.started" ]; then
    # shellcheck disable=SC2046
    as_root pg_ctlcluster --skip-systemctl-redirect $(cat "$STATE_DIR/postgres.cluster") stop || true
    rm -f "$STATE_DIR/postgres.started"
    say "PostgreSQL stopped"
  fi
}

case "${1:-}" in
  up) cmd_up ;;
  env) cmd_env ;;
  createdb) shift; cmd_createdb "$@" ;;
  dropdb) shift; cmd_dropdb "$@" ;;
  status) cmd_status ;;
  down) cmd_down ;;
  *) sed -n '2,16p' "$0" >&2; exit 2 ;;
esac
