package heartbeat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/schedd/schedd/internal/outbound"
	"github.com/schedd/schedd/internal/platform"
)

// helperEnv makes the test binary act as an exec target (see TestMain).
const helperEnv = "HEARTBEAT_TEST_HELPER"

// helperMain is the exec target the test binary becomes. Mode "target" reads the pulse on
// stdin, checks the SCHEDD_* environment agrees with it, prints os.Args[2] and exits with
// os.Args[1]. Mode "hang" sleeps until killed.
func helperMain(mode string) int {
	switch mode {
	case "hang":
		time.Sleep(time.Minute)
		return 0
	case "target":
	default:
		fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
		return 2
	}
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		return 2
	}
	var p Pulse
	if err := json.Unmarshal(data, &p); err != nil {
		fmt.Fprintln(os.Stderr, "pulse:", err)
		return 2
	}
	for _, kv := range PulseEnv(p) {
		k, v, _ := bytes.Cut([]byte(kv), []byte("="))
		if os.Getenv(string(k)) != string(v) {
			fmt.Fprintf(os.Stderr, "%s=%q, pulse says %q\n", k, os.Getenv(string(k)), v)
			return 2
		}
	}
	code, _ := strconv.Atoi(os.Args[1])
	fmt.Print(os.Args[2])
	return code
}

// helperRun runs the test binary as the exec target in mode, with the daemon's runner.
func helperRun(mode string) outbound.RunFunc {
	return func(ctx context.Context, spec platform.RunSpec) (platform.RunResult, error) {
		exe, err := os.Executable()
		if err != nil {
			return platform.RunResult{}, err
		}
		spec.Argv = append([]string{exe}, spec.Argv...)
		spec.Env = append(spec.Env, helperEnv+"="+mode)
		return platform.RunCommand(ctx, spec)
	}
}

// runner makes a RunFunc of a fake target that sees argv, the whole environment and stdin
// and answers with an exit code and stdout.
func runner(f func(ctx context.Context, argv, env []string, stdin []byte) (int, []byte, error)) outbound.RunFunc {
	return func(ctx context.Context, spec platform.RunSpec) (platform.RunResult, error) {
		code, out, err := f(ctx, spec.Argv, spec.Env, spec.Stdin)
		return platform.RunResult{Status: platform.ExitStatus{Exited: true, Code: code}, Stdout: out}, err
	}
}
