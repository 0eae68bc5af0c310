package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/schedd/schedd/internal/config"
)

func newConfigCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "config",
		Short: "Check a config file, or print a commented example",
	}
	group(c)
	c.AddCommand(&cobra.Command{
		Use:   "validate [FILE]",
		Short: "Check a config file; exit 78 with every problem listed if it is invalid",
		Long: `Check a config file the way schedd run would read it: unknown keys, wrong types
and bad values are reported with file, line and column, all at once. FILE defaults
to $SCHEDD_CONFIG. Exit status: 0 valid, 78 invalid, 2 usage.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError{fmt.Errorf("config validate takes one FILE, got %d", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			path := os.Getenv("SCHEDD_CONFIG")
			if len(args) == 1 {
				path = args[0]
			}
			if path == "" {
				return usageError{fmt.Errorf("config validate needs a FILE (or $SCHEDD_CONFIG)")}
			}
			return validateConfig(cmd.OutOrStdout(), path)
		},
	})
	c.AddCommand(&cobra.Command{
		Use:   "example",
		Short: "Print a commented config file with every setting and its default",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := io.WriteString(cmd.OutOrStdout(), config.Example())
			return err
		},
	})
	return c
}

// validateConfig loads path like `run` would, with the command optional (it may come
// from `run -- CMD`).
func validateConfig(w io.Writer, path string) error {
	cfg, err := config.Load(path)
	if err != nil {
		return withCode(exitConfig, err)
	}
	if len(cfg.Gateway.Command) == 0 {
		cfg.Gateway.Command = []string{"(from the command line)"}
	}
	if err := cfg.Validate(); err != nil {
		return withCode(exitConfig, err)
	}
	fmt.Fprintf(w, "%s: valid\n", path)
	return nil
}
