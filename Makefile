# vpnctl: build, test, install.  See README.md.
PREFIX  ?= /usr/local
DESTDIR ?=
BINDIR  := $(PREFIX)/bin
MANDIR  := $(PREFIX)/share/man/man1
SWIFT   ?= swift

# Debian packages the build and the tests need. `make deps` installs only
# what is missing, so it is fast when everything is present.
BUILD_PACKAGES := pkg-config libnl-3-dev libnl-route-3-dev libssl-dev libdbus-1-dev gettext
TEST_PACKAGES  := passwd util-linux iproute2 iputils-ping python3 wireguard-go wireguard-tools openvpn openssl nftables tcpdump dbus-daemon dbus-bin systemd python3-dbus python3-gi
# The host lab: a Debian root file system booted with systemd-nspawn.
HOST_PACKAGES  := mmdebstrap systemd-container dpkg-dev binutils
# IKEv2: charon, kernel-libipsec (extra), EAP-MSCHAPv2 (extauth), openssl and gcrypt, swanctl and pki for the lab.
IKEV2_PACKAGES := strongswan-charon libcharon-extra-plugins libcharon-extauth-plugins libstrongswan-standard-plugins libstrongswan-extra-plugins strongswan-swanctl strongswan-pki
DEMO_PACKAGES  :=
EXTRA_PACKAGES ?=

# -static-executable: start-up ~1.4 ms instead of ~4.7 ms with --static-swift-stdlib
# alone (hyperfine, vpnctl --version); scripts call vpnctl in loops.
RELEASE_FLAGS := -c release --static-swift-stdlib -Xswiftc -static-executable
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps build locale test test-unit test-cli test-i18n test-lab test-host test-security test-fuzz fuzz demo bench soak coverage install uninstall clean

all: build

deps:
	@missing=""; \
	for p in $(BUILD_PACKAGES) $(TEST_PACKAGES) $(HOST_PACKAGES) $(IKEV2_PACKAGES) $(DEMO_PACKAGES) $(EXTRA_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "[deps] installing:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# vpnctl-dbus links the shared libdbus-1 (Debian's static libdbus-1.a needs
# libsystemd, which Debian ships only shared), so it is built without
# -static-executable, in a build directory of its own; vpnctl stays static.
# Its relocations are bound at start and then read-only (-z now, -z relro).
DBUS_FLAGS := -c release --static-swift-stdlib --scratch-path .build/dbus -Xlinker -z -Xlinker now -Xlinker -z -Xlinker relro

build: deps
	$(SWIFT) build $(RELEASE_FLAGS) --product vpnctl
	$(SWIFT) build $(RELEASE_FLAGS) --product vpnctl-example-udp-relay
	$(SWIFT) build $(DBUS_FLAGS) --product vpnctl-dbus
	@mkdir -p build
	@cp "$$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)/vpnctl" build/vpnctl
	@cp "$$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)/vpnctl-example-udp-relay" build/vpnctl-example-udp-relay
	@cp "$$($(SWIFT) build $(DBUS_FLAGS) --show-bin-path)/vpnctl-dbus" build/vpnctl-dbus
	@$(MAKE) --no-print-directory locale
	@echo "built build/vpnctl"

# The message catalogs: po/<lang>.po to build/locale/<lang>/LC_MESSAGES/vpnctl.mo,
# where build/vpnctl finds them (an installed vpnctl reads $(PREFIX)/share/locale).
LANGUAGES := $(basename $(notdir $(wildcard po/*.po)))
LOCALEDIR := $(PREFIX)/share/locale
locale:
	@for l in $(LANGUAGES); do \
	  mkdir -p build/locale/$$l/LC_MESSAGES && \
	  msgfmt --check -o build/locale/$$l/LC_MESSAGES/vpnctl.mo po/$$l.po || exit 1; \
	done

# Every stage runs, even after one fails; the summary names each stage's result.
TEST_STAGES := unit i18n cli lab host security fuzz packaging
test: build
	@results=""; failed=0; \
	for stage in $(TEST_STAGES); do \
	  if $(MAKE) --no-print-directory test-$$stage; then results="$$results\n  ok   - $$stage"; \
	  else results="$$results\n  FAIL - $$stage"; failed=1; fi; \
	done; \
	printf "test stages:$$results\n"; exit $$failed

test-unit:
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

# Not in CI: the unit tests' line coverage of Sources/ (llvm-cov from the
# toolchain), one row per file, then the TOTAL line.
LLVM_COV ?= $(dir $(realpath $(shell which $(SWIFT))))llvm-cov
coverage:
	$(SWIFT) build --build-tests --enable-code-coverage
	$(SWIFT) test --skip-build --enable-code-coverage
	@$(LLVM_COV) report .build/debug/vpnctlPackageTests.xctest \
	  -instr-profile="$$(dirname "$$($(SWIFT) test --show-codecov-path)")/default.profdata" \
	  -ignore-filename-regex='(/Tests/|/\.build/)' | tee .build/coverage.txt
	@echo; grep '^TOTAL' .build/coverage.txt

# The catalogs against the sources: po/vpnctl.pot up to date with the L("...")
# messages, every message translated in every po/*.po (not fuzzy, the same
# placeholders), and msgfmt's own checks.
test-i18n:
	@$(MAKE) -s deps
	python3 Tools/check-unmarked.py
	python3 Tools/extract-messages.py --check
	python3 Tools/check-translations.py
	python3 Tools/check-glossary.py
	@for l in $(LANGUAGES); do msgfmt --check --statistics -o /dev/null po/$$l.po || exit 1; done

# The crash test injects its fault through a debug build (the release binary
# reads no test-only variable).
test-cli: build
	$(SWIFT) build --product vpnctl
	VPNCTL_DEBUG_BIN="$$($(SWIFT) build --show-bin-path)/vpnctl" bash Tests/cli/run.sh build/vpnctl

# Real tunnels inside namespaces the tests create (skips, with the reason, where
# namespaces or tun devices are not available).
test-lab: build
	bash Tests/lab/e2e.sh build/vpnctl

# vpnctl's .deb on a booted Debian with systemd, systemd-resolved, D-Bus and
# NetworkManager (systemd-nspawn in a lab namespace; the root file system is
# cached under .build/host). See Tests/host/run.sh.
test-host: deb
	bash Tests/host/run.sh build/vpnctl_$$(build/vpnctl --version | sed -n 's/^vpnctl //p')_$$(dpkg --print-architecture).deb

# Hostile input end to end, as root and as a user the suite creates and removes.
test-security: build
	bash Tests/security/run.sh build/vpnctl

# Every parser of outside input has a libFuzzer target (Tests/Fuzz/targets),
# built against the product's own sources. `make fuzz` runs each for
# FUZZ_SECONDS (default 60), growing the corpus under .build; `make test`
# replays the committed corpus and regressions once each, deterministically.
FUZZ_SECONDS ?= 60
fuzz: deps
	bash Tests/Fuzz/build.sh
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash Tests/Fuzz/run.sh

test-fuzz: deps
	bash Tests/Fuzz/build.sh > .build/fuzz-build.log 2>&1 || { tail -20 .build/fuzz-build.log; exit 1; }
	FUZZ_REPLAY=1 bash Tests/Fuzz/run.sh

demo: build
	bash Tests/lab/demo.sh build/vpnctl

bench: build
	@$(MAKE) -s deps EXTRA_PACKAGES="hyperfine iperf3"
	bash Benchmarks/run.sh build/vpnctl
	bash Benchmarks/stats.sh build/vpnctl
	bash Benchmarks/openvpn.sh build/vpnctl
	bash Benchmarks/recovery.sh build/vpnctl
	bash Benchmarks/profiles.sh build/vpnctl
	bash Benchmarks/tunnels.sh build/vpnctl
	bash Benchmarks/agent.sh build/vpnctl
	bash Benchmarks/dbus.sh build/vpnctl
	bash Benchmarks/ondemand.sh build/vpnctl
	bash Benchmarks/ikev2.sh build/vpnctl
	bash Benchmarks/apps.sh build/vpnctl

# Not in CI: SOAK_CYCLES (default 1000) start/stop cycles with fd and RSS
# samples, concurrent status readers, and a check that nothing is left.
soak: build
	@$(MAKE) -s deps EXTRA_PACKAGES="time"
	bash Benchmarks/soak.sh build/vpnctl

# Where `make install` puts the man pages and the completion scripts: the
# directories each shell searches under PREFIX (for PREFIX=/usr the first is
# bash-completion's completionsdir; the Debian package uses zsh's
# vendor-completions instead of site-functions, as Debian's zsh asks).
MAN5DIR     := $(PREFIX)/share/man/man5
MAN7DIR     := $(PREFIX)/share/man/man7
BASHCOMPDIR := $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR  := $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR := $(PREFIX)/share/fish/vendor_completions.d
# The agent's man page and systemd units (ExecStart names $(BINDIR)).
MAN8DIR     := $(PREFIX)/share/man/man8
UNITDIR     ?= $(PREFIX)/lib/systemd/system
# vpnctl-dbus's bus policy and interfaces (dbus-daemon reads $(DBUSDIR)/system.d).
DBUSDIR     ?= $(PREFIX)/share/dbus-1
# Its polkit action (polkitd reads $(POLKITDIR)/actions).
POLKITDIR   ?= $(PREFIX)/share/polkit-1
UNITS       := vpnctl-agent.socket vpnctl-agent.service vpnctl@.service vpnctl-block@.service vpnctl-dbus.service

install: build completions
	install -d "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(MANDIR)" "$(DESTDIR)$(MAN5DIR)" \
	  "$(DESTDIR)$(BASHCOMPDIR)" "$(DESTDIR)$(ZSHCOMPDIR)" "$(DESTDIR)$(FISHCOMPDIR)"
	install -m 0755 build/vpnctl "$(DESTDIR)$(BINDIR)/vpnctl"
	install -m 0644 man/vpnctl.1 "$(DESTDIR)$(MANDIR)/vpnctl.1"
	install -m 0644 man/vpnctl-profile.5 "$(DESTDIR)$(MAN5DIR)/vpnctl-profile.5"
	install -d "$(DESTDIR)$(MAN7DIR)"
	install -m 0644 man/vpnctl-provider.7 "$(DESTDIR)$(MAN7DIR)/vpnctl-provider.7"
	install -m 0644 build/completions/vpnctl.bash "$(DESTDIR)$(BASHCOMPDIR)/vpnctl"
	install -m 0644 build/completions/_vpnctl "$(DESTDIR)$(ZSHCOMPDIR)/_vpnctl"
	install -m 0644 build/completions/vpnctl.fish "$(DESTDIR)$(FISHCOMPDIR)/vpnctl.fish"
	for l in $(LANGUAGES); do \
	  install -d "$(DESTDIR)$(LOCALEDIR)/$$l/LC_MESSAGES" && \
	  install -m 0644 build/locale/$$l/LC_MESSAGES/vpnctl.mo "$(DESTDIR)$(LOCALEDIR)/$$l/LC_MESSAGES/vpnctl.mo" || exit 1; \
	done
	install -d "$(DESTDIR)$(MAN8DIR)" "$(DESTDIR)$(UNITDIR)"
	install -m 0644 man/vpnctl-agent.8 "$(DESTDIR)$(MAN8DIR)/vpnctl-agent.8"
	install -m 0755 build/vpnctl-dbus "$(DESTDIR)$(BINDIR)/vpnctl-dbus"
	install -m 0644 man/vpnctl-dbus.8 "$(DESTDIR)$(MAN8DIR)/vpnctl-dbus.8"
	install -D -m 0644 dbus/org.vpnctl.VPN1.conf "$(DESTDIR)$(DBUSDIR)/system.d/org.vpnctl.VPN1.conf"
	install -D -m 0644 dbus/org.vpnctl.VPN1.xml "$(DESTDIR)$(DBUSDIR)/interfaces/org.vpnctl.VPN1.xml"
	install -D -m 0644 dbus/org.vpnctl.policy "$(DESTDIR)$(POLKITDIR)/actions/org.vpnctl.policy"
	install -d "$(DESTDIR)$(DBUSDIR)/system-services"
	sed 's|@BINDIR@|$(BINDIR)|g' dbus/org.vpnctl.VPN1.service > "$(DESTDIR)$(DBUSDIR)/system-services/org.vpnctl.VPN1.service"
	chmod 0644 "$(DESTDIR)$(DBUSDIR)/system-services/org.vpnctl.VPN1.service"
	for u in $(UNITS); do \
	  sed 's|@BINDIR@|$(BINDIR)|g' "packaging/systemd/$$u" > "$(DESTDIR)$(UNITDIR)/$$u" && chmod 0644 "$(DESTDIR)$(UNITDIR)/$$u" || exit 1; \
	done

uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/vpnctl" "$(DESTDIR)$(MANDIR)/vpnctl.1" "$(DESTDIR)$(MAN5DIR)/vpnctl-profile.5" \
	  "$(DESTDIR)$(MAN7DIR)/vpnctl-provider.7" \
	  "$(DESTDIR)$(BASHCOMPDIR)/vpnctl" "$(DESTDIR)$(ZSHCOMPDIR)/_vpnctl" "$(DESTDIR)$(FISHCOMPDIR)/vpnctl.fish"
	rm -f $(foreach l,$(LANGUAGES),"$(DESTDIR)$(LOCALEDIR)/$(l)/LC_MESSAGES/vpnctl.mo")
	rm -f "$(DESTDIR)$(BINDIR)/vpnctl-dbus" "$(DESTDIR)$(MAN8DIR)/vpnctl-dbus.8" \
	  "$(DESTDIR)$(DBUSDIR)/system.d/org.vpnctl.VPN1.conf" "$(DESTDIR)$(DBUSDIR)/interfaces/org.vpnctl.VPN1.xml" \
	  "$(DESTDIR)$(DBUSDIR)/system-services/org.vpnctl.VPN1.service" "$(DESTDIR)$(POLKITDIR)/actions/org.vpnctl.policy"
	rm -f "$(DESTDIR)$(MAN8DIR)/vpnctl-agent.8" $(addprefix "$(DESTDIR)$(UNITDIR)/,$(addsuffix ",$(UNITS)))

# The completion scripts, generated by the binary from its command specs.
.PHONY: completions deb lint-deb test-packaging
completions: build
	@mkdir -p build/completions
	LC_ALL=C build/vpnctl completion bash > build/completions/vpnctl.bash
	LC_ALL=C build/vpnctl completion zsh > build/completions/_vpnctl
	LC_ALL=C build/vpnctl completion fish > build/completions/vpnctl.fish

# build/vpnctl_<version>_<arch>.deb (the version is `vpnctl --version`'s).
DEB_PACKAGES := dpkg-dev binutils
deb: build completions
	@$(MAKE) -s deps EXTRA_PACKAGES="$(DEB_PACKAGES)"
	bash packaging/build-deb.sh build/vpnctl build/completions build build/locale

# lintian on the package; every override is explained in packaging/debian/lintian-overrides.
lint-deb: deb
	@$(MAKE) -s deps EXTRA_PACKAGES="lintian"
	lintian --fail-on error,warning --display-info build/vpnctl_*_$$(dpkg --print-architecture).deb

# The package installed into a scratch root and removed; completions driven
# in bash (zsh, fish where installed); the man pages linted.
test-packaging: deb
	@$(MAKE) -s deps EXTRA_PACKAGES="lintian groff-base mandoc zsh fish bash-completion"
	bash Tests/packaging/run.sh build/vpnctl

clean:
	rm -rf .build build
