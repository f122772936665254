# Hostile networks and providers (issue 29, items 1–4): names that would
# reach nft as patterns, and what a provider pushes. The kill switch's
# TunnelVision cases run in the lab (Tests/lab/dns.sh), where there is a tunnel.

_net_import() { wg_conf > p.conf && "$BIN" import p.conf >/dev/null; }

# _net_edit PROFILE PYTHON: `vpnctl edit` with an editor that changes the JSON (p).
_net_edit() {
  printf '#!/bin/sh\nexec python3 -c %q "$1"\n' "import json,sys; f=sys.argv[1]; p=json.load(open(f)); $2; json.dump(p, open(f,'w'))" > "$WORK/editor"
  chmod 700 "$WORK/editor"
  EDITOR="$WORK/editor" VISUAL="" timeout 10 "$BIN" edit "$1"
}

# Item 2: '*' is nft's wildcard ("r*" matched the underlay), '"' and ';' end
# its word: every such name is refused by edit, naming the field, and nothing is saved.
sec_net_interface_name_patterns_refused() {
  _net_import || return 1
  local before name err rc
  before=$(cat "$VPNCTL_CONFIG_DIR/preferences.json")
  for name in 'r*' '*' 'a"b' 'a;b' 'a b' 'x{y}' 'ütun' '..'; do
    err=$(IFNAME=$name _net_edit p "import os; p['protocol']['interfaceName']=os.environ['IFNAME']" 2>&1 </dev/null); rc=$?
    [ $rc = 5 ] || { echo "  interfaceName '$name': exit $rc: $err"; return 1; }
    grep -q "protocol.interfaceName" <<<"$err" || { echo "  interfaceName '$name' said: $err"; return 1; }
  done
  [ "$(cat "$VPNCTL_CONFIG_DIR/preferences.json")" = "$before" ] || { echo "  the store changed"; return 1; }
  _net_edit p "p['protocol']['interfaceName']='wg-office.1'" >/dev/null 2>&1 </dev/null || { echo "  a literal name was refused"; return 1; }
}

# Item 2: a name written into the preferences by hand is refused at start
# (exit 5, every problem named), before any table, interface or process exists.
sec_net_interface_name_in_json_refused_at_start() {
  _net_import || return 1
  python3 - "$VPNCTL_CONFIG_DIR/preferences.json" <<'PY' || return 1
import json, sys
f = sys.argv[1]; d = json.load(open(f))
d["profiles"][0]["protocol"]["interfaceName"] = "r*"
json.dump(d, open(f, "w"))
PY
  local err rc
  err=$(timeout 10 "$BIN" start p 2>&1); rc=$?
  [ $rc = 5 ] || { echo "  exit $rc: $err"; return 1; }
  grep -q "protocol.interfaceName: 'r\*' is not a valid interface name" <<<"$err" || { echo "  said: $err"; return 1; }
}
