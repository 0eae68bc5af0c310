package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// newManCmd writes a man page for schedd and each of its commands: the packages install
// them, and `man schedd-run` then shows the same text as `schedd run --help`.
func newManCmd() *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:    "man --dir DIR",
		Short:  "Write the man pages (schedd.1, schedd-run.1, ...) into DIR",
		Hidden: true,
		Args:   noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return usageError{fmt.Errorf("schedd man needs --dir DIR")}
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			root := cmd.Root()
			root.DisableAutoGenTag = true
			header := &doc.GenManHeader{Title: "SCHEDD", Section: "1", Source: "schedd " + version, Manual: "schedd manual"}
			if err := doc.GenManTree(root, header, dir); err != nil {
				return fmt.Errorf("writing the man pages into %s: %w", dir, err)
			}
			return nil
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "the `DIR` to write the pages into (made if missing)")
	return c
}
