package cron

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// helperEnv switches the test binary into a helper process: TestMain runs the mode named by
// os.Args[1] (see helperMain) instead of the tests.
const helperEnv = "SCHEDD_CRON_HELPER"

// helperArgv is the command that runs helper mode args[0] with args[1:].
func helperArgv(args ...string) []string {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return append([]string{exe}, args...)
}

// helperVars are the variables that turn the test binary into the helper.
var helperVars = map[string]string{helperEnv: "1", "GORACE": "atexit_sleep_ms=0"}

// helperMain is the helper process. Modes:
//
//	exit N            print "out" on stdout and "err" on stderr, exit N
//	env KEY...        print KEY=VALUE for each KEY
//	trap-term         print "ready", exit 0 on SIGTERM
//	ignore-term       ignore SIGTERM, print "ready", sleep
//	attempt DIR       create DIR/attempt-$SCHEDD_CRON_ATTEMPT (or a .dup file if it exists)
//	                  holding our pid; sleep for ever on attempt 1, exit 0 on later ones
//	service DIR SLOT  run a cron service on DIR with one exec job at SLOT (Unix ns) whose
//	                  command is "attempt DIR"; run until killed
func helperMain(string) int {
	if len(os.Args) < 2 {
		return 2
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "exit":
		fmt.Println("out")
		fmt.Fprintln(os.Stderr, "err")
		n, _ := strconv.Atoi(args[0])
		return n
	case "env":
		for _, k := range args {
			fmt.Printf("%s=%s\n", k, os.Getenv(k))
		}
		return 0
	case "trap-term":
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		fmt.Println("ready")
		<-c
		fmt.Println("got SIGTERM")
		return 0
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		time.Sleep(time.Hour)
		return 0
	case "attempt":
		name := filepath.Join(args[0], "attempt-"+os.Getenv("SCHEDD_CRON_ATTEMPT"))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			f, err = os.Create(name + ".dup")
		}
		if err != nil {
			return 1
		}
		fmt.Fprint(f, os.Getpid())
		f.Close()
		if os.Getenv("SCHEDD_CRON_ATTEMPT") == "1" {
			time.Sleep(time.Hour)
		}
		return 0
	case "service":
		ns, _ := strconv.ParseInt(args[1], 10, 64)
		svc, err := New(configured(Config{OpenStore: sqliteAt(args[0]), Jobs: []Job{lostJob(args[0], time.Unix(0, ns))}}))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := svc.Run(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", os.Args[1])
	return 2
}

// lostJob is the job of the killed-service test: one exec run at slot, retried quickly.
func lostJob(dir string, slot time.Time) Job {
	return Job{Name: "backup", Schedule: instants{slot}, Retry: Retry{Schedule: []time.Duration{100 * time.Millisecond}},
		Action: &Exec{Command: helperArgv("attempt", dir), Env: helperVars, Grace: time.Second}}
}
