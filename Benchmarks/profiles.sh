#!/usr/bin/env bash
# `make bench` (part 5): the store at scale. `list` and `status --json` with
# 1,000 profiles against the same with 3, in the same run (no tunnels, so no
# namespace: each store is a private directory, and one of the 3 is
# recorded as connected with a live supervisor nowhere: status derives it).
# Usage: Benchmarks/profiles.sh path/to/vpnctl [profiles]
set -uo pipefail
V=$(realpath "${1:?usage: profiles.sh path/to/vpnctl [profiles]}")
N=${2:-1000}
command -v hyperfine >/dev/null || { echo "hyperfine is needed: apt-get install --no-install-recommends hyperfine"; exit 1; }
OUT=$(mktemp -d /tmp/vpnctl-bench-profiles.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

# conf NAME INDEX: a wg-quick file (keys are fixed: nothing is started).
conf() {
  cat <<CONF
[Interface]
PrivateKey = yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=
Address = 198.19.$(( $2 / 250 )).$(( $2 % 250 + 2 ))/32

[Peer]
PublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=
AllowedIPs = 198.19.0.0/16
Endpoint = 198.18.0.1:$(( 20000 + $2 ))
CONF
}

# store DIR COUNT: a preferences store with COUNT profiles.
store() {
  mkdir -p "$1/conf"
  for i in $(seq 1 "$2"); do
    conf "p$i" "$i" > "$1/conf/p$i.conf"
    VPNCTL_CONFIG_DIR="$1/etc" VPNCTL_RUN_DIR="$1/run" "$V" import "$1/conf/p$i.conf" >/dev/null || { echo "import $i failed"; exit 1; }
  done
}
t0=$(date +%s)
store "$OUT/small" 3
store "$OUT/large" "$N"
echo "== $N profiles vs 3 (stores built in $(( $(date +%s) - t0 )) s; preferences.json: $(wc -c < "$OUT/large/etc/preferences.json") bytes)"
env_of() { echo "env VPNCTL_CONFIG_DIR=$OUT/$1/etc VPNCTL_RUN_DIR=$OUT/$1/run"; }
hyperfine -N -w 5 -r 60 --export-json "$OUT/h.json" \
  "$(env_of small) $V list" "$(env_of large) $V list" \
  "$(env_of small) $V status --json" "$(env_of large) $V status --json" > /dev/null 2>&1
python3 - "$OUT/h.json" "$N" <<'PY'
import json, sys
r = [x["median"] * 1000 for x in json.load(open(sys.argv[1]))["results"]]
n = sys.argv[2]
for i, cmd in enumerate(["list", "status --json"]):
    small, large = r[2 * i], r[2 * i + 1]
    print(f"{cmd:14s} 3 profiles median {small:7.2f} ms   {n} profiles median {large:7.2f} ms   ratio {large / small:.2f} (target <= 3.0)")
PY
