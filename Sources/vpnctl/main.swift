import VPNCLI

exitProcess(VPNCLI.run(CommandLine.arguments, context: .process()))
