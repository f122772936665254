#!/usr/bin/env bash
# Builds one libFuzzer binary per parser of outside input. Each target is
# compiled against the product's own sources (Sources/VPNSystem, Sources/VPNCore, Sources/VPNService,
# Sources/VPNDBus and the C shim), instrumented with -sanitize=fuzzer,address: the fuzzers test
# the functions vpnctl runs, not copies of them.
# Usage: Tests/Fuzz/build.sh [out-dir]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:-$ROOT/.build/fuzz}
mkdir -p "$OUT"
SWIFTC=${SWIFTC:-swiftc}
CLANG=${CLANG:-$(dirname "$(command -v swiftc)")/clang}
NL=$(echo $(pkg-config --cflags-only-I libnl-route-3.0))
CRYPTO_LIBS=$(pkg-config --libs libcrypto)
DBUS_CFLAGS=$(echo $(pkg-config --cflags-only-I dbus-1))
DBUS_LIBS=$(pkg-config --libs dbus-1)

cat > "$OUT/module.modulemap" <<MAP
module CVPNShims {
    header "$ROOT/Sources/CVPNShims/include/CVPNShims.h"
    export *
}
MAP
"$CLANG" -c -O1 -g -fsanitize=fuzzer-no-link,address -I "$ROOT/Sources/CVPNShims/include" \
  "$ROOT/Sources/CVPNShims/shims.c" -o "$OUT/shims.o"

flags=(-O -g -sanitize=fuzzer,address -parse-as-library -swift-version 5 -I "$OUT" -I "$ROOT/Sources/CNetlink" -I "$ROOT/Sources/CCrypto"
       -I "$ROOT/Sources/CDBus" -Xcc -fmodule-map-file="$OUT/module.modulemap" -Xcc "$NL")
for f in $DBUS_CFLAGS; do flags+=(-Xcc "$f"); done
build_module() {  # build_module NAME SOURCES...
  local name=$1; shift
  (cd "$OUT" && "$SWIFTC" "${flags[@]}" -module-name "$name" -emit-module -emit-module-path "$OUT/$name.swiftmodule" \
     -wmo -c "$@" -o "$OUT/$name.o")
}
build_module VPNSystem $(find "$ROOT/Sources/VPNSystem" -name '*.swift' | sort)
build_module VPNCore $(find "$ROOT/Sources/VPNCore" -name '*.swift' | sort)
build_module VPNService $(find "$ROOT/Sources/VPNService" -name '*.swift' | sort)
build_module VPNDBus $(find "$ROOT/Sources/VPNDBus" -name '*.swift' | sort)

for target in "$HERE"/targets/*.swift; do
  name=$(basename "$target" .swift)
  # gold warns once per ASan register helper that it cannot export a local
  # symbol (~140 lines a target, harmless); everything else is shown.
  "$SWIFTC" "${flags[@]}" -module-name "Fuzz_${name//-/_}" "$target" \
    "$OUT/VPNDBus.o" "$OUT/VPNService.o" "$OUT/VPNCore.o" "$OUT/VPNSystem.o" "$OUT/shims.o" -lnl-route-3 -lnl-3 $CRYPTO_LIBS $DBUS_LIBS -o "$OUT/fuzz-$name" \
    2> >(grep -v "warning: Cannot export local symbol '__asan" >&2)
  echo "built $OUT/fuzz-$name"
done
