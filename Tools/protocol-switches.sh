#!/bin/sh
# Protocol special cases outside Providers/ and the model's own coding (issue 32).
# Prints each hit; the last line is the count.
cd "$(dirname "$0")/.." || exit 1
hits=$(grep -rnE "case \.(wireguard|openvpn|ikev2|provider)\b|case \.(wireguard|openvpn|ikev2|provider)\(|\.protocol(Type)? == \.|\.kind (==|!=) \.(wireguard|openvpn|ikev2|provider)" Sources --include=*.swift \
 | grep -v "^Sources/VPNCore/Providers/" | grep -v "^Sources/VPNCore/Model/ProtocolConfiguration.swift\|^Sources/VPNCore/Model/ModelDecoding.swift")
[ -n "$hits" ] && printf '%s\n' "$hits"
printf '%s\n' "$hits" | grep -c .
