package platform

import "sync"

// children tells the reaper which of schedd's children are not its to reap or stop.
// Every process schedd forks is registered here from before the fork until its owner has
// waited for it, so the reaper (reap_linux.go) never takes an exit status that os/exec or
// Process waits for, and never mistakes one of schedd's own children for an orphan it
// adopted from the gateway's tree.
var children = struct {
	// fork is held shared from before a fork until the new pid is registered, and
	// exclusively by whoever reaps or signals unregistered children: a child can then
	// never be seen between its birth and its registration.
	fork sync.RWMutex
	mu   sync.Mutex
	pids map[int]childKind
}{pids: map[int]childKind{}}

type childKind uint8

const (
	// childOwned is waited for by the code that started it.
	childOwned childKind = iota + 1
	// childKept is never waited for by its starter (a released detached process) or
	// was already schedd's child when the reaper started: reaped when it exits, never
	// stopped as an orphan of the gateway.
	childKept
)

// forking is called before a fork; the returned func, called with the new pid (0 when the
// fork failed), registers it as owned and lets the reaper run again.
func forking() (forked func(pid int)) {
	children.fork.RLock()
	return func(pid int) {
		if pid > 0 {
			setChild(pid, childOwned)
		}
		children.fork.RUnlock()
	}
}

// waited is called once the owner has reaped pid.
func waited(pid int) {
	children.mu.Lock()
	delete(children.pids, pid)
	children.mu.Unlock()
}

// keep marks pid as a child nobody waits for: the reaper may reap it, never stop it.
func keep(pid int) { setChild(pid, childKept) }

func setChild(pid int, k childKind) {
	children.mu.Lock()
	children.pids[pid] = k
	children.mu.Unlock()
}

func childKindOf(pid int) childKind {
	children.mu.Lock()
	defer children.mu.Unlock()
	return children.pids[pid]
}

// AdoptedProcess is a live child of schedd that schedd did not start: a descendant of
// the gateway orphaned and reparented to schedd as its subreaper (or as PID 1).
type AdoptedProcess struct {
	PID   int
	PGID  int    // its process group: the gateway's, unless it left it
	Name  string // the command name the kernel keeps (comm)
	start uint64 // with PID, tells this process from a later one that reuses the pid
}
