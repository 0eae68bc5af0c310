package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/schedd/schedd/internal/platform"
)

func newUninstallCmd() *cobra.Command {
	o := &installOptions{}
	c := &cobra.Command{
		Use:   "uninstall [--manager systemd|launchd|schtasks] [--user]",
		Short: "Stop schedd's service and remove it from its service manager",
		Long: `Stop the service (the gateway is stopped gracefully), take it out of its service
manager and remove the unit (and schedd.socket), plist or task. The config file and the state dir are kept.
Uninstalling what is not installed is not an error.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.uninstall(cmd.Context(), cmd.OutOrStdout())
		},
	}
	o.bindCommon(c)
	return c
}

func (o *installOptions) uninstall(ctx context.Context, stdout io.Writer) error {
	s, paths, err := o.spec(false)
	if err != nil {
		return err
	}
	socket := paths.Socket != ""
	if socket {
		_, err := os.Stat(o.at(paths.Socket))
		socket = err == nil
	}
	if socket {
		s.Socket = &platform.SocketSpec{}
	}
	if o.root == "" {
		if err := runSteps(ctx, stdout, platform.UninstallSteps(s, os.Getuid())); err != nil {
			return err
		}
	}
	if socket {
		if err := os.Remove(o.at(paths.Socket)); err != nil {
			return fmt.Errorf("remove socket unit: %w", err)
		}
		fmt.Fprintf(stdout, "removed %s\n", o.at(paths.Socket))
	}
	switch err := os.Remove(o.at(paths.File)); {
	case err == nil:
		fmt.Fprintf(stdout, "removed %s\n", o.at(paths.File))
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(stdout, "%s was not installed\n", o.at(paths.File))
	default:
		return fmt.Errorf("remove service file: %w", err)
	}
	if o.root == "" {
		if err := runSteps(ctx, stdout, platform.UninstallAfterSteps(s)); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "kept %s and the state dir\n", o.at(s.Config))
	return nil
}
