#!/usr/bin/env bash
# Bring up PostgreSQL and Redis for Switchyard on Debian (and install the
# PgBouncer the tests start for themselves): install them when
# missing, start them when down, and create the role and databases. Safe to
# run any number of times.
set -euo pipefail

PGPORT=${PGPORT:-5432}
REDIS_PORT=${REDIS_PORT:-6379}
DB_USER=${DB_USER:-switchyard}
DB_PASS=${DB_PASS:-switchyard}
DATABASES=${DATABASES:-"switchyard switchyard_test"}

log() { printf '\033[1;34m==>\033[0m %s\n' "$*" >&2; }
need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo "$@"; else echo "need root for: $*" >&2; exit 1; fi
  else "$@"; fi
}

missing=()
dpkg-query -W -f='${Status}' postgresql 2>/dev/null | grep -q "install ok installed" || missing+=(postgresql)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
# PgBouncer: the tests start private ones (store/storetest/pgbouncer.go); only the binary is needed.
command -v pgbouncer >/dev/null 2>&1 || [ -x /usr/sbin/pgbouncer ] || missing+=(pgbouncer)
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]} (Debian apt)"
  need_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  need_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# PostgreSQL: apt does not start services on this kind of machine (no systemd).
if ! pg_isready -q -h 127.0.0.1 -p "$PGPORT"; then
  cluster=$(pg_lsclusters -h | awk '$2=="main"{print $1; exit}')
  if [ -z "$cluster" ]; then
    log "creating a PostgreSQL cluster"
    ver=$(ls /usr/lib/postgresql | sort -V | tail -1)
    need_root pg_createcluster "$ver" main >/dev/null
    cluster=$ver
  fi
  log "starting PostgreSQL $cluster/main"
  need_root pg_ctlcluster --skip-systemctl-redirect "$cluster" main start || true
  for _ in $(seq 1 50); do pg_isready -q -h 127.0.0.1 -p "$PGPORT" && break; sleep 0.2; done
  pg_isready -q -h 127.0.0.1 -p "$PGPORT" || { echo "PostgreSQL did not start on 127.0.0.1:$PGPORT" >&2; exit 1; }
fi

# Redis.
if ! redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1; then
  log "starting Redis on 127.0.0.1:$REDIS_PORT"
  redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no \
    --dir /tmp --logfile "/tmp/redis-$REDIS_PORT.log" >/dev/null
  for _ in $(seq 1 50); do redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
  redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null || { echo "Redis did not start on 127.0.0.1:$REDIS_PORT" >&2; exit 1; }
fi

# A role with a password works with both trust and scram authentication.
psql_admin() {
  if [ "$(id -u)" -eq 0 ]; then (cd / && runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 "$@")
  else psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PGPORT" -U postgres "$@"; fi
}
for db in $DATABASES; do
  psql_admin -v u="$DB_USER" -v p="$DB_PASS" -v d="$db" <<'SQL'
SELECT format('CREATE ROLE %I LOGIN CREATEDB', :'u') WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'u')\gexec
SELECT format('ALTER ROLE %I PASSWORD %L', :'u', :'p')\gexec
SELECT format('CREATE DATABASE %I OWNER %I', :'d', :'u') WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'d')\gexec
SQL
done
log "PostgreSQL (127.0.0.1:$PGPORT) and Redis (127.0.0.1:$REDIS_PORT) are ready"
