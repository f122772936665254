# Provider plugins in the lab (source after lab.sh): the example plugin built
# with VPNProviderKit, its peer, and a user the plugins run as.
#
#   plugin peer   Tests/lab/plugin-server.py on 198.18.0.1:5555/udp (server ns),
#                 tun ${LAB}p 198.19.20.1/24, token in $LAB_DIR/plugin.token
#   resource      http://198.19.20.1:8080/ (bound to the peer's tunnel address)
#   client        198.19.20.2/32, route 198.19.20.0/24 into the plugin's utun
#   user          vp$LAB (made here, removed by plugin_down), the plugins' user
#   executables   $PLUG_BIN (0755, root's), outside the 0700 lab dir so the
#                 user can reach them; removed by plugin_down
#
# The plugins' manifests go into each test's own config dir
# ($VPNCTL_CONFIG_DIR/providers) or package dir (VPNCTL_PROVIDERS_DIR).

PLUG_USER=vp$LAB
PLUG_BIN=
PLUG_EXAMPLE=
PLUG_ID=org.vpnctl.example.udp-relay

# Prints why the plugin tests cannot run here, or nothing. $1: the vpnctl binary.
plugin_cannot_run() {
  local ex; ex=$(dirname "$1")/vpnctl-example-udp-relay
  [ -x "$ex" ] || { echo "no example plugin next to vpnctl ($ex; make build puts it there)"; return; }
  command -v useradd >/dev/null && command -v userdel >/dev/null || { echo "useradd/userdel are not installed"; return; }
  command -v python3 >/dev/null || { echo "python3 is not installed"; return; }
  id "$PLUG_USER" >/dev/null 2>&1 && { echo "a user $PLUG_USER exists already"; return; }
}

plugin_up() {
  PLUG_EXAMPLE=$(dirname "$V")/vpnctl-example-udp-relay
  need useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin --user-group "$PLUG_USER" || return 1
  PLUG_READY_USER=yes
  PLUG_BIN=$(mktemp -d /tmp/vpnctl-plug.XXXXXX) && chmod 755 "$PLUG_BIN" || return 1
  need install -m 0755 "$PLUG_EXAMPLE" "$PLUG_BIN/udp-relay" || return 1
  (umask 077; head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$LAB_DIR/plugin.token")
  plugin_server_start || return 1
  (cd "$LAB_DIR/www" && exec ip netns exec "$NS_S" python3 -m http.server --bind 198.19.20.1 8080) > "$LAB_DIR/http-plugin.log" 2>&1 &
  LAB_PIDS+=($!)
  wait_for "the plugin peer's HTTP server on 198.19.20.1:8080" 6 s bash -c 'exec 3<>/dev/tcp/198.19.20.1/8080'
}

plugin_server_start() {
  ip netns exec "$NS_S" python3 "$HERE/plugin-server.py" "${LAB}p" 198.18.0.1 5555 "$LAB_DIR/plugin.token" 900 \
    > "$LAB_DIR/plugin-server.log" 2>&1 &
  LAB_PIDS+=($!)
  PLUG_SERVER=$!
  wait_for "the plugin peer's tun ${LAB}p" 5 s ip link show "${LAB}p" >/dev/null || return 1
  need s ip addr add 198.19.20.1/24 dev "${LAB}p" || return 1
  need s ip link set "${LAB}p" up
}

# Removes the user (its processes are the plugins', gone with their
# supervisors) and the executables.
plugin_down() {
  [ -n "$PLUG_BIN" ] && rm -rf "$PLUG_BIN"
  if [ "${PLUG_READY_USER:-}" = yes ]; then
    local p
    for p in $(plugin_processes | cut -d' ' -f1); do echo "  teardown: a process of $PLUG_USER was left: $p"; kill -KILL "$p"; done
    # -f: a plugin that died with its SIGKILLed supervisor stays a zombie
    # until PID 1 reaps it, and a zombie still counts as the user's process.
    userdel -f "$PLUG_USER" 2>/dev/null
    PLUG_READY_USER=
  fi
  return 0
}

# plugin_manifest DIR FILE ID EXECUTABLE [CAPABILITIES]: a manifest, root's, 0644.
plugin_manifest() {
  mkdir -p "$1" && chmod 755 "$1"
  printf '{"schemaVersion": 1, "identifier": "%s", "version": "1.0", "executable": "%s", "capabilities": %s, "user": "%s"}\n' \
    "$3" "$4" "${5:-[\"packet-tunnel\"]}" "$PLUG_USER" > "$1/$2"
  chmod 644 "$1/$2"
}

# plugin_profile NAME IDENTIFIER [EXTRA-CONFIG-JSON]: a provider profile
# written into this test's store (there is no import format for one).
plugin_profile() {
  local dir=$VPNCTL_CONFIG_DIR
  mkdir -p "$dir" && chmod 700 "$dir"
  python3 - "$dir/preferences.json" "$1" "$2" "${3:-}" <<'PY'
import json, os, sys, uuid
path, name, ident, extra = sys.argv[1:5]
doc = json.load(open(path)) if os.path.exists(path) else {"schemaVersion": 1, "profiles": []}
config = {"address": "198.19.20.2/32", "routes": "198.19.20.0/24", "mtu": "1400"}
config.update(json.loads(extra) if extra else {})
doc["profiles"].append({"id": str(uuid.uuid4()), "name": name, "enabled": True, "revision": 1,
    "protocol": {"type": "provider", "providerIdentifier": ident, "serverAddress": "198.18.0.1:5555",
                 "providerConfiguration": config, "secrets": {"token": "relay-token"}}})
old = os.umask(0o077)
with open(path + ".tmp", "w") as f: json.dump(doc, f)
os.umask(old)
os.replace(path + ".tmp", path)
PY
  ip netns exec "${IN_NS:-$NS_C}" "$V" secret set "$1" relay-token < "$LAB_DIR/plugin.token" >/dev/null || { echo "  secret set $1 relay-token failed"; return 1; }
}

# No process of the plugins' user is left, and nothing of the tunnel.
plugin_nothing_left() {
  local left; left=$(plugin_processes)
  [ -n "$left" ] && { echo "  a plugin process is left: $left"; return 1; }
  nothing_left
}

# The live (not zombie) processes of the plugins' user: "PID ARGS" lines.
plugin_processes() {
  local uid; uid=$(id -u "$PLUG_USER" 2>/dev/null) || return 0
  ps -e -o pid=,uid=,stat=,args= | awk -v u="$uid" '$2 == u && $3 !~ /^Z/ { $2 = ""; $3 = ""; print }' | tr -s ' ' | sed 's/^ //'
}

# proc_field PID FIELD: a line's values from /proc/PID/status ("Uid" -> "999 999 999 999").
proc_field() { awk -v f="$2:" '$1==f { $1=""; sub(/^ /, ""); print }' "/proc/$1/status"; }
