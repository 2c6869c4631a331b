package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// The command line follows kubectl's conventions, through pflag as
// kubectl's does: long flags take two dashes (--namespace), short ones
// one (-n, -oyaml), flags may follow positional arguments (get cm -n web),
// and everything after "--" is positional.

// splitCommand finds the subcommand in args: connection flags may come
// before it, as the nats CLI allows (kubebridge --context prod get cm).
// It returns the command and every other argument, in order; "--help"
// or "--version" when one of those comes before any command.
func splitCommand(args []string) (string, []string, error) {
	probe := pflag.NewFlagSet("kubebridge", pflag.ContinueOnError)
	probe.SetInterspersed(false) // the first positional argument is the command
	probe.SetOutput(io.Discard)
	probe.Usage = func() {}
	(&connFlags{}).register(probe)
	version := probe.Bool("version", false, "print the version")
	err := probe.Parse(args)
	switch {
	case errors.Is(err, pflag.ErrHelp):
		return "--help", nil, nil
	case err != nil:
		return "", nil, beforeCommand(err)
	case *version:
		return "--version", nil, nil
	case probe.ArgsLenAtDash() == 0:
		return "", nil, errors.New("no command before --")
	case probe.NArg() == 0:
		return "", nil, nil
	}
	rest := probe.Args()
	lead := args[:len(args)-len(rest)]
	return rest[0], append(slices.Clone(lead), rest[1:]...), nil
}

// beforeCommand says what is wrong with a flag before the command: most
// often a command's flag (-n) put where only connection flags may go.
func beforeCommand(err error) error {
	var unknown *pflag.NotExistError
	if !errors.As(err, &unknown) {
		return err
	}
	flag := "--" + unknown.GetSpecifiedName()
	if short := unknown.GetSpecifiedShortnames(); short != "" {
		flag = "-" + short
	}
	return fmt.Errorf("flag %s before the command: only connection flags may come first", flag)
}

// newCommandFlags returns the flag set of subcommand name, holding the
// connection flags conn and -h/--help; the command adds its own. Its
// help, on stdout, is synopsis, the command's flags, then the connection
// flags.
func newCommandFlags(e *env, name, synopsis string, conn *pflag.FlagSet) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard) // parseArgs reports errors itself
	fs.BoolP("help", "h", false, "help for "+name)
	fs.AddFlagSet(conn)
	fs.Usage = func() {
		own := pflag.NewFlagSet(name, pflag.ContinueOnError)
		fs.VisitAll(func(f *pflag.Flag) {
			if conn.Lookup(f.Name) == nil {
				own.AddFlag(f)
			}
		})
		fmt.Fprintf(e.stdout, "%s\n\nFlags:\n%s\nConnection flags:\n%s", strings.TrimSpace(synopsis), own.FlagUsages(), conn.FlagUsages())
	}
	return fs
}

// parseArgs parses a subcommand's arguments and returns the positional
// ones; it returns the exit code to return at once (help, or a usage
// error reported in one line), or -1 to go on.
func parseArgs(e *env, fs *pflag.FlagSet, args []string) ([]string, int) {
	if err := fs.Parse(args); err != nil {
		e.errorf("%v", err)
		fmt.Fprintf(e.stderr, "See 'kubebridge %s --help' for usage.\n", fs.Name())
		return nil, ExitError
	}
	if help, _ := fs.GetBool("help"); help {
		fs.Usage()
		return nil, ExitOK
	}
	return fs.Args(), -1
}
