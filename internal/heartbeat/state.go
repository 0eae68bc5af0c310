package heartbeat

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/schedd/schedd/internal/api"
	"go.uber.org/zap"
)

// StateVersion is the version of the persisted state this package writes.
const StateVersion = 1

// State is what survives a daemon restart: the global switch, the phase seed, and per
// agent the schedule and the last outcome.
type State struct {
	Version int                   `json:"version"`
	Seed    string                `json:"seed,omitempty"`
	Enabled *bool                 `json:"enabled,omitempty"` // nil = never switched at run time
	Agents  map[string]AgentState `json:"agents,omitempty"`
}

// AgentState is one agent's persisted schedule and history.
type AgentState struct {
	IntervalMS int64               `json:"interval_ms"`
	PhaseMS    int64               `json:"phase_ms"`
	NextDueAt  time.Time           `json:"next_due_at,omitzero"`
	Last       *api.HeartbeatRun   `json:"last,omitempty"`
	Event      *api.HeartbeatEvent `json:"event,omitempty"`
	Starts     []time.Time         `json:"starts,omitempty"` // recent run starts, for the cooldown gate
}

// StateStore loads and saves State. Save must be atomic: a crash leaves the old or the new
// state, never a torn one. Calls are serialized by the caller.
type StateStore interface {
	Load() (State, error)
	Save(State) error
}

// StateFileName is the file FileStore keeps in its directory.
const StateFileName = "heartbeat.json"

// FileStore keeps State as a small JSON file, replaced atomically (temp file, fsync,
// rename, directory fsync). A file that does not decode is moved aside and Load starts
// fresh (R-ENV-06).
type FileStore struct {
	dir string
	log *zap.Logger
	now func() time.Time
}

var _ StateStore = (*FileStore)(nil)

// NewFileStore keeps the state in dir/heartbeat.json. log may be nil.
func NewFileStore(dir string, log *zap.Logger) *FileStore {
	if log == nil {
		log = zap.NewNop()
	}
	return &FileStore{dir: dir, log: log, now: time.Now}
}

// Path is the state file's path.
func (f *FileStore) Path() string { return filepath.Join(f.dir, StateFileName) }

// Load reads the state. A missing file is an empty state; a corrupt or unknown-version
// file is renamed to heartbeat.json.corrupt-<UTC time>, logged, and an empty state returned.
func (f *FileStore) Load() (State, error) {
	data, err := os.ReadFile(f.Path())
	if errors.Is(err, fs.ErrNotExist) {
		return State{Version: StateVersion}, nil
	}
	if err != nil {
		return State{}, fmt.Errorf("read heartbeat state: %w", err)
	}
	var st State
	problem := ""
	switch err := json.Unmarshal(data, &st); {
	case err != nil:
		problem = err.Error()
	case st.Version != StateVersion:
		problem = fmt.Sprintf("unsupported version %d", st.Version)
	}
	if problem == "" {
		return st, nil
	}
	aside := f.Path() + ".corrupt-" + f.now().UTC().Format("20060102T150405.000Z")
	if err := os.Rename(f.Path(), aside); err != nil {
		f.log.Warn("heartbeat state unreadable; starting fresh", zap.String("path", f.Path()),
			zap.String("problem", problem), zap.NamedError("quarantine_error", err))
	} else {
		f.log.Warn("heartbeat state unreadable; moved aside, starting fresh", zap.String("path", f.Path()),
			zap.String("problem", problem), zap.String("moved_to", aside))
	}
	return State{Version: StateVersion}, nil
}

// Save replaces the state file atomically.
func (f *FileStore) Save(st State) error {
	st.Version = StateVersion
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode heartbeat state: %w", err)
	}
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return fmt.Errorf("create state dir: %w", err)
	}
	tmp, err := os.CreateTemp(f.dir, "."+StateFileName+".*.tmp")
	if err != nil {
		return fmt.Errorf("create heartbeat state: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write heartbeat state: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync heartbeat state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close heartbeat state: %w", err)
	}
	if err := os.Rename(tmp.Name(), f.Path()); err != nil {
		return fmt.Errorf("replace heartbeat state: %w", err)
	}
	committed = true
	if err := syncDir(f.dir); err != nil {
		return fmt.Errorf("sync state dir: %w", err)
	}
	return nil
}

// memStore keeps State in memory: the default when Deps.Store is nil.
type memStore struct {
	mu sync.Mutex
	st State
}

func (m *memStore) Load() (State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st, nil
}

func (m *memStore) Save(st State) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.st = st
	return nil
}
