package config

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// writeUsage writes the -h text: how settings combine and one row per Var.
func writeUsage(out io.Writer) {
	fmt.Fprintln(out, "Settings of kraken serve (the broker):")
	fmt.Fprintln(out)
	fmt.Fprintln(out, "Every setting comes from its environment variable or its flag; a flag wins over")
	fmt.Fprintln(out, "the environment, and an empty variable counts as unset. Boolean flags may be given")
	fmt.Fprintln(out, "bare (--auth-allow-all) or with =true/=false.")
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  FLAG\tENVIRONMENT\tDEFAULT\tDESCRIPTION")
	for _, v := range Vars() {
		def := v.Default
		if def == "" {
			def = `""`
		}
		fmt.Fprintf(tw, "  --%s\t%s\t%s\t%s\n", v.Flag, v.Env, def, v.Help)
	}
	_ = tw.Flush()
}
