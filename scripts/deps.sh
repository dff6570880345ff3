#!/usr/bin/env bash
# Install rocemeter's build and test dependencies on Debian 12 (apt-get).
# Idempotent and quiet when everything is installed already. clang-format:
# make check's format check (scripts/check-format). debootstrap and
# systemd-container: the live systemd test (selftests/system/test_service.py).
# clickhouse-server and -client: the fleet store's tests start their own
# servers as plain processes (tests/lib/clickhouse.py); the package's system
# service is neither started by the installation nor enabled.
set -euo pipefail
PKGS=(
  make gcc clang llvm clang-format pkg-config bpftool libbpf-dev libelf-dev zlib1g-dev
  libssl-dev openssl libpcap-dev libsqlite3-dev sqlite3 libinih-dev libsystemd-dev libglib2.0-dev libjansson-dev
  libmicrohttpd-dev prometheus
  libcmocka-dev python3 python3-pytest python3-scapy tshark tcpdump tcpreplay
  libfixbuf-tools socat iproute2 ethtool systemd
  debootstrap systemd-container
  libcurl4-openssl-dev clickhouse-server clickhouse-client
)
missing=()
for p in "${PKGS[@]}"; do
  st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$st" = "install ok installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing packages: ${missing[*]}; run 'make deps' as root" >&2
  exit 1
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
apt-get update -qq
# No service starts during the installation (invoke-rc.d and deb-systemd-invoke ask policy-rc.d).
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && own_policy=1
fi
rc=0
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || rc=$?
[ "$own_policy" -eq 0 ] || rm -f "$policy"
[ "$rc" -eq 0 ] || exit "$rc"
# The tests never use the system ClickHouse: keep it off (harmless where systemd does not run).
if [[ " ${missing[*]} " == *" clickhouse-server "* ]] && command -v systemctl >/dev/null; then
  systemctl disable --now clickhouse-server >/dev/null 2>&1 || true
fi
