//go:build unix

package platform

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runHelper is the helper process: the test binary re-executed with helperEnv set.
// Modes (R-IDs name the scenarios they serve):
//
//	exit N                 exit with code N (R-CHILD-19)
//	sleep                  sleep until killed
//	echo ARGS...           print each arg on stdout, "err:"-prefixed on stderr
//	env                    print the environment, one variable a line
//	cat                    copy stdin to stdout
//	flood N                write N 100-byte lines to stdout as fast as possible (R-CHILD-14)
//	longline N [TAIL]      write N bytes without a newline, in 1 MiB writes; with TAIL
//	                       then "\n" and TAIL (again without a newline) (R-INPUT-09)
//	spew-ignore-term       ignore SIGTERM and write lines forever (R-CHILD-10)
//	close-stdio            close stdout/stderr, say so on fd 3, keep running (R-CHILD-15)
//	trap-term              print "ready PID", then "got SIGTERM PID" on SIGTERM and exit
//	fork exit|stay MODE... start MODE as a grandchild in our group, print
//	                       "grandchild PID", then exit 0 or sleep (R-CHILD-12)
//	pidfile PATH MODE...   write our pid to PATH (atomically), then run MODE
//	notify STATE           send STATE to $NOTIFY_SOCKET, print "sent PID", sleep
//	lock DIR               hold LockStateDir(DIR), print "locked PID", sleep
//	trylock DIR            LockStateDir(DIR): exit 0, or print "locked-by PID" and exit 3
//	dial PATH              connect to the unix socket PATH, write "hello", wait for EOF
func runHelper(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "helper: no mode")
		return 2
	}
	mode, args := args[0], args[1:]
	switch mode {
	case "exit":
		n, _ := strconv.Atoi(args[0])
		return n
	case "dial":
		c, err := net.Dial("unix", args[0])
		if err != nil {
			fmt.Fprintln(os.Stderr, "dial:", err)
			return 1
		}
		defer c.Close()
		c.Write([]byte("hello"))
		io.Copy(io.Discard, c)
		return 0
	case "sleep":
		time.Sleep(time.Hour)
		return 0
	case "nap":
		d, _ := time.ParseDuration(args[0])
		time.Sleep(d)
		return 0
	case "setsid-fork": // a grandchild in a session of its own, then exit
		cmd := exec.Command(selfExe(), args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "fork:", err)
			return 1
		}
		fmt.Println("grandchild", cmd.Process.Pid)
		return 0
	case "echo":
		for _, a := range args {
			fmt.Println(a)
			fmt.Fprintln(os.Stderr, "err:"+a)
		}
		return 0
	case "env":
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
		return 0
	case "cat":
		_, _ = io.Copy(os.Stdout, os.Stdin)
		return 0
	case "flood":
		n, _ := strconv.Atoi(args[0])
		w := bufio.NewWriterSize(os.Stdout, 1<<16)
		line := []byte(strings.Repeat("x", 99) + "\n")
		for i := 0; i < n; i++ {
			for j, v := 7, i; j >= 0; j, v = j-1, v/10 {
				line[j] = byte('0' + v%10)
			}
			if _, err := w.Write(line); err != nil {
				return 1
			}
		}
		if err := w.Flush(); err != nil {
			return 1
		}
		return 0
	case "longline":
		n, _ := strconv.Atoi(args[0])
		chunk := []byte(strings.Repeat("y", 1<<20))
		for ; n > 0; n -= len(chunk) {
			os.Stdout.Write(chunk[:min(n, len(chunk))])
		}
		if len(args) > 1 {
			fmt.Print("\n" + args[1])
		}
		return 0
	case "spew-ignore-term":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		for i := 0; ; i++ {
			fmt.Println("spew", i)
		}
	case "close-stdio":
		os.Stdout.Close()
		os.Stderr.Close()
		fd3 := os.NewFile(3, "fd3")
		fmt.Fprintln(fd3, "closed")
		fd3.Close()
		time.Sleep(time.Hour)
		return 0
	case "trap-term":
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		fmt.Println("ready", os.Getpid())
		<-c
		fmt.Println("got SIGTERM", os.Getpid())
		return 0
	case "fork":
		then := args[0]
		cmd := exec.Command(selfExe(), args[1:]...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "fork:", err)
			return 1
		}
		fmt.Println("grandchild", cmd.Process.Pid)
		if then == "exit" {
			return 0
		}
		time.Sleep(time.Hour)
		return 0
	case "pidfile":
		tmp := args[0] + ".tmp"
		if err := os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			return 1
		}
		if err := os.Rename(tmp, args[0]); err != nil {
			return 1
		}
		return runHelper(args[1:])
	case "notify":
		addr := &net.UnixAddr{Name: os.Getenv("NOTIFY_SOCKET"), Net: "unixgram"}
		conn, err := net.DialUnix("unixgram", nil, addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "notify:", err)
			return 1
		}
		if _, err := conn.Write([]byte(args[0])); err != nil {
			fmt.Fprintln(os.Stderr, "notify:", err)
			return 1
		}
		conn.Close()
		fmt.Println("sent", os.Getpid())
		time.Sleep(time.Hour)
		return 0
	case "lock":
		l, err := LockStateDir(args[0])
		if err != nil {
			fmt.Fprintln(os.Stderr, "lock:", err)
			return 1
		}
		defer l.Close()
		fmt.Println("locked", os.Getpid())
		time.Sleep(time.Hour)
		return 0
	case "trylock":
		l, err := LockStateDir(args[0])
		var le *LockedError
		if errors.As(err, &le) {
			fmt.Println("locked-by", le.PID)
			return 3
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "trylock:", err)
			return 1
		}
		l.Close()
		return 0
	}
	fmt.Fprintln(os.Stderr, "helper: unknown mode", mode)
	return 2
}

// selfExe returns the helper binary inside a helper process.
func selfExe() string {
	exe, err := os.Executable()
	if err != nil {
		return os.Args[0]
	}
	return exe
}
