package platform

import (
	"context"
	"os"
	"time"
)

// The API other packages code against; a changed signature fails to compile here.
var (
	_ func(Command) (*Process, error)                   = Start
	_ func(*Process) int                                = (*Process).PID
	_ func(*Process, os.Signal) error                   = (*Process).Signal
	_ func(*Process, os.Signal) error                   = (*Process).SignalLeader
	_ func(*Process) error                              = (*Process).Kill
	_ func(*Process) <-chan struct{}                    = (*Process).Done
	_ func(*Process) <-chan struct{}                    = (*Process).OutputClosed
	_ func(*Process) ExitStatus                         = (*Process).ExitStatus
	_ func(*Process, context.Context) error             = (*Process).KillGroupAndWait
	_ func(*Process) error                              = (*Process).Release
	_ func(ExitStatus) string                           = ExitStatus.String
	_ func(Stream) string                               = Stream.String
	_ func(*SpawnError) string                          = (*SpawnError).Error
	_ func(*SpawnError) error                           = (*SpawnError).Unwrap
	_ func([]string, map[string]string) []string        = ChildEnv
	_ func() []string                                   = ScrubbedKeys
	_ func(context.Context, RunSpec) (RunResult, error) = RunCommand
	_ func(string) (os.Signal, error)                   = ParseSignal
	_ func(string) (string, error)                      = CanonicalSignal
	_ func(os.Signal) string                            = SignalName
	_ func(string) (*NotifySocket, error)               = ListenNotify
	_ func(*NotifySocket) string                        = (*NotifySocket).Path
	_ func(*NotifySocket) (NotifyMessage, error)        = (*NotifySocket).Recv
	_ func(*NotifySocket) error                         = (*NotifySocket).Close
	_ func(int) (int, error)                            = ProcessGroup
	_ func(SdNotifier, string) (bool, error)            = SdNotifier.Notify
	_ func(SdNotifier) (time.Duration, error)           = SdNotifier.WatchdogInterval
	_ func(string) (*Lock, error)                       = LockStateDir
	_ func(*Lock) error                                 = (*Lock).Close
	_ func() (<-chan os.Signal, func())                 = Signals
	_ func(os.Signal) bool                              = IsTerminate
	_ func(os.Signal) bool                              = IsRestart
	_ func(os.Signal) bool                              = IsReload
	_ func() string                                     = DefaultStateDir
	_ func() string                                     = DefaultRuntimeDir
	_ func() error                                      = SetChildSubreaper
	_                                                   = ExitStatus{Exited: true, Code: 0, Signaled: false, Signal: 0, SignalName: "", CoreDumped: false}
	_                                                   = Command{Argv: nil, Env: nil, Dir: "", Output: func(Stream, []byte, int64) {}, ExtraFiles: []*os.File(nil)}
	_                                                   = SpawnError{Op: "", Path: "", Err: nil}
	_                                                   = RunSpec{Argv: nil, Env: nil, Dir: "", Stdin: nil, MaxOutput: 0}
	_                                                   = RunResult{Status: ExitStatus{}, Stdout: nil, Stderr: nil}
	_                                                   = NotifyMessage{PID: 0, Fields: map[string]string(nil)}
	_                                                   = LockedError{Path: "", PID: 0}
	_ error                                             = ErrLocked
	_ error                                             = ErrNotSupported
	_ error                                             = &LockedError{}
	_ Stream                                            = Stdout
	_ Stream                                            = Stderr
)

// The reaper's API.
var (
	_ func(func(int, ExitStatus)) (func(), error)                 = StartReaper
	_ func() []AdoptedProcess                                     = Adopted
	_ func([]AdoptedProcess, os.Signal) ([]AdoptedProcess, error) = SignalAdopted
	_                                                             = AdoptedProcess{PID: 0, PGID: 0, Name: ""}
)
