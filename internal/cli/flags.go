package cli

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
)

// splitCommand finds the subcommand in args: connection flags may come
// before it, as the nats CLI allows (kubebridge --context prod get cm).
// It returns the command and every other argument, in order.
func splitCommand(args []string) (string, []string, error) {
	probe := flag.NewFlagSet("", flag.ContinueOnError)
	(&connFlags{}).register(probe)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			if a == "--" {
				return "", nil, errors.New("no command before --")
			}
			rest := append(append([]string{}, args[:i]...), args[i+1:]...)
			return a, rest, nil
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch name {
		case "h", "help", "version":
			return a, args[i+1:], nil
		}
		if probe.Lookup(name) == nil {
			return "", nil, fmt.Errorf("flag %s before the command: only connection flags may come first", a)
		}
		if !hasValue {
			i++ // its value
		}
	}
	return "", nil, nil
}

// parseInterspersed parses args with fs and returns the positional
// arguments. Flags may follow positional arguments, as with kubectl
// (get configmaps -n web); everything after "--" is positional. A short
// value flag may carry its value attached, as in -oyaml or -nweb.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	args = attachShortValues(fs, args)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		consumed := len(args) - fs.NArg()
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, fs.Args()...), nil
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// attachShortValues rewrites -oyaml into -o=yaml for one-letter value
// flags, which the flag package would take for a flag named "oyaml".
func attachShortValues(fs *flag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' && a[2] != '=' && fs.Lookup(a[1:]) == nil {
			if f := fs.Lookup(a[1:2]); f != nil && !isBool(f) {
				a = a[:2] + "=" + a[2:]
			}
		}
		out = append(out, a)
	}
	return out
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// stringVar registers one string flag under several names (-n and
// --namespace).
func stringVar(fs *flag.FlagSet, p *string, names []string, value, usage string) {
	for i, n := range names {
		u := usage
		if i > 0 {
			u = "same as -" + names[0]
		}
		fs.StringVar(p, n, value, u)
	}
}

// boolVar registers one boolean flag under several names.
func boolVar(fs *flag.FlagSet, p *bool, names []string, usage string) {
	for i, n := range names {
		u := usage
		if i > 0 {
			u = "same as -" + names[0]
		}
		fs.BoolVar(p, n, false, u)
	}
}

// parseArgs parses a subcommand's arguments; it returns the exit code to
// return at once (help or a usage error), or -1 to go on.
func parseArgs(e *env, fs *flag.FlagSet, args []string) ([]string, int) {
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, ExitOK
	}
	if err != nil {
		// The flag package has printed the error and the usage.
		return nil, ExitError
	}
	return pos, -1
}

// printFlags prints a flag set's flags one line each, aliases together
// (-n, --namespace), long names with two dashes as kubectl shows them.
func printFlags(fs *flag.FlagSet) {
	aliases := map[string][]string{}
	fs.VisitAll(func(f *flag.Flag) {
		if primary, ok := strings.CutPrefix(f.Usage, "same as -"); ok {
			aliases[primary] = append(aliases[primary], f.Name)
		}
	})
	dash := func(n string) string {
		if len(n) == 1 {
			return "-" + n
		}
		return "--" + n
	}
	tw := tabwriter.NewWriter(fs.Output(), 0, 4, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		if strings.HasPrefix(f.Usage, "same as -") {
			return
		}
		names := []string{dash(f.Name)}
		for _, a := range aliases[f.Name] {
			names = append(names, dash(a))
		}
		arg := ""
		if !isBool(f) {
			arg = " " + strings.TrimPrefix(fmt.Sprintf("%T", f.Value), "*flag.")
			arg = strings.TrimSuffix(strings.TrimSuffix(arg, "Value"), "value")
		}
		fmt.Fprintf(tw, "  %s%s\t%s\n", strings.Join(names, ", "), arg, f.Usage)
	})
	_ = tw.Flush()
}
