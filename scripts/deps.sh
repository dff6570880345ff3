#!/usr/bin/env bash
# Install rocemeter's build and test dependencies on Debian 12 (apt-get).
# Idempotent and quiet when everything is installed already. clang-format:
# make check's format check (scripts/check-format). debootstrap and
# systemd-container: the live systemd test (selftests/system/test_service.py).
# dpkg-dev, debhelper, lintian, fakeroot: `make deb` and its test (test_deb.py).
# clickhouse-server and -client: the fleet store's tests start their own
# servers as plain processes (tests/lib/clickhouse.py); the package's system
# service is neither started by the installation nor enabled. prometheus and
# prometheus-alertmanager: the metrics tests start their own servers on
# loopback ports (selftests/system/test_metrics.py, test_alerts.py); promtool
# checks the shipped rules (tests/unit/test_prometheus_rules.py, python3-yaml).
# libjs-d3: the charts `report --format html` inlines (read at run time from
# /usr/share/javascript/d3/); chromium: its test loads the page headless.
# xdp-tools: xdp-loader attaches the parse-only reference program beside the
# live meter (selftests/system/test_live_two_cpus.py) and shows what holds the
# XDP hook (docs/requirements.md).
# python3-cryptography: certificates with chosen validity dates
# (selftests/system/test_collector_limits.py).
set -euo pipefail
PKGS=(
  make gcc clang llvm clang-format pkg-config bpftool libbpf-dev libelf-dev zlib1g-dev
  libssl-dev openssl libpcap-dev libsqlite3-dev sqlite3 libinih-dev libsystemd-dev libglib2.0-dev libjansson-dev
  libmicrohttpd-dev prometheus prometheus-alertmanager python3-yaml
  libcmocka-dev python3 python3-pytest python3-scapy python3-cryptography tshark tcpdump tcpreplay
  libfixbuf-tools socat iproute2 ethtool systemd tmux
  debootstrap systemd-container
  dpkg-dev debhelper lintian fakeroot
  libcurl4-openssl-dev clickhouse-server clickhouse-client
  libjs-d3 chromium xdp-tools
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
