// Package deps pins the chosen dependencies in go.mod until the packages that use them land.
// Delete it once every import below is used elsewhere.
package deps

import (
	_ "github.com/coreos/go-systemd/v22/daemon"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/spf13/cobra"
	_ "go.uber.org/goleak"
	_ "go.uber.org/zap"
	_ "go.yaml.in/yaml/v3"
	_ "golang.org/x/sync/errgroup"
	_ "golang.org/x/sys/unix"
	_ "modernc.org/sqlite"
	_ "pgregory.net/rapid"
)
