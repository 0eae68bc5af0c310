package heartbeat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"time"
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

// osRun is a RunFunc on os/exec, standing in for the daemon's platform.RunCommand.
func osRun(ctx context.Context, argv, env []string, stdin []byte) (int, []byte, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok && ctx.Err() == nil {
		return ee.ExitCode(), out, nil
	}
	if err != nil {
		return -1, out, err
	}
	return 0, out, nil
}

// helperRun runs the test binary as the exec target in mode.
func helperRun(mode string) RunFunc {
	return func(ctx context.Context, argv, env []string, stdin []byte) (int, []byte, error) {
		exe, err := os.Executable()
		if err != nil {
			return -1, nil, err
		}
		return osRun(ctx, append([]string{exe}, argv...), append(env, helperEnv+"="+mode), stdin)
	}
}
