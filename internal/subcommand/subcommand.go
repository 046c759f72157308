package subcommand

import (
	"fmt"
	"io"
)

// Func runs one command with the arguments after its name and returns the process's exit code.
type Func func(args []string, stdout, stderr io.Writer) int

// Run runs the command args[0] of commands. help, -h and --help print usage to stdout (exit 0); no command
// prints it to stderr, and an unknown one is named before it (exit 2). binary prefixes that message.
func Run(binary, usage string, commands map[string]Func, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	name := args[0]
	switch command := commands[name]; {
	case name == "help" || name == "-h" || name == "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case command != nil:
		return command(args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "%s: unknown command %q\n\n%s", binary, name, usage)
		return 2
	}
}
