# The underlay-flap lab (source after lab.sh and recovery.sh): a client
# namespace of its own whose only way to the WireGuard server's endpoint is a
# default route, so that flapping its link takes nothing else down.
#
#   client ns  ${LAB}f, veth ${LAB}f0 198.18.2.2  <->  ${LAB}s2 198.18.2.1 (server ns)
#              default via 198.18.2.1 (deleted with the link, re-added after it)
#   endpoint   198.18.5.1:51822 (server lo)
#   tunnel     198.19.2.1 (server wg ${LAB}y)  <->  198.19.2.2 (client utunN)
#
# With a default route, 198.19.2.1 also answers over the underlay, so a probe
# "through the tunnel" is a ping bound to the utun (ping -I): it passes only
# when the tunnel carries it.

NS_F=${LAB}f
f() { ip netns exec "$NS_F" "$@"; }

flap_up() {
  lab_netns_add "$NS_F" || return 1
  need ip link add "${LAB}f0" netns "$NS_F" type veth peer name "${LAB}s2" netns "$NS_S" || return 1
  need f ip addr add 198.18.2.2/24 dev "${LAB}f0" || return 1
  need s ip addr add 198.18.2.1/24 dev "${LAB}s2" || return 1
  need f ip link set "${LAB}f0" up || return 1
  need s ip link set "${LAB}s2" up || return 1
  # The server answers ARP on ${LAB}s2 only for 198.18.2.1, not for its
  # endpoint 198.18.5.1 (on lo): else wireguard-go, which sends from a
  # remembered source and interface, would still reach the endpoint "on-link"
  # with the default route gone, and deleting the route would break nothing.
  need s sysctl -qw "net.ipv4.conf.${LAB}s2.arp_ignore=1" || return 1
  need f ip route add default via 198.18.2.1 || return 1
  lab_roam_endpoint || return 1
  (umask 077; wg genkey > "$LAB_DIR/clientf.key") || { echo "  lab set-up failed at: wg genkey"; return 1; }
  wg pubkey < "$LAB_DIR/clientf.key" > "$LAB_DIR/clientf.pub"
  lab_server_peer "${LAB}y" 198.19.2.1 51822 "$(cat "$LAB_DIR/clientf.pub")" 198.19.2.2 || return 1
  lab_profile flap clientf "${LAB}y" 198.19.2.2 198.19.2.0/24 51822 \
    | sed 's/^Endpoint = 198.18.0.1:/Endpoint = 198.18.5.1:/' > "$LAB_DIR/flap.conf"
}

# The client's underlay as a test expects to find it: link up, default route.
flap_underlay_restore() {
  f ip link set "${LAB}f0" up && f ip route replace default via 198.18.2.1
}

# Faults: the link down (which takes the default route with it) and up with
# the route re-added; or only the default route deleted and re-added.
flap_link_down() { f ip link set "${LAB}f0" down; }
flap_link_up() { f ip link set "${LAB}f0" up && f ip route replace default via 198.18.2.1; }
flap_route_down() { f ip route del default via 198.18.2.1; }
flap_route_up() { f ip route add default via 198.18.2.1; }

# flap_probe IFNAME: one ping to the server's tunnel address through IFNAME only.
flap_probe() { f ping -n -q -c 1 -W 1 -I "$1" 198.19.2.1 >/dev/null 2>&1; }
