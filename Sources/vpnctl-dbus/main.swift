import VPNDBus

VPNDBusMain.exit(VPNDBusMain.run(CommandLine.arguments))
