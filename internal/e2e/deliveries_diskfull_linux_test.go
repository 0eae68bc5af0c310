package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
)

// R-ENV-04 end to end, on a state dir that really fills up (a 24 MiB tmpfs; it needs root
// to mount, and is skipped otherwise): with the disk full, an enqueue fails with a clear
// error (CLI exit 1, API 507 disk_full) and stores nothing, status says so, and the entries
// already stored keep being sent and delivered; once space returns, enqueue works again
// and nothing was lost.
func TestE2EDiskFull_RENV04(t *testing.T) {
	// Not parallel: whether the store has room left when the disk fills depends on where its
	// log stands then, which other tests' load shifts.
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	dir := shortDir(t)
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=24m,mode=0700"); err != nil {
		t.Skipf("cannot mount a small tmpfs (needs root): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	var hold atomic.Bool
	hold.Store(true)
	sink := newSinkRecorder(t, func(string) int {
		if hold.Load() {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	cfg := writeConfig(t, fmt.Sprintf(`deliveries:
  schedule: [100ms]
  jitter: 0
  max_retries: 1000
  sinks:
    hook: {http: {url: "%s/hook"}}
`, sink.URL))
	d := startDaemon(t, daemonOpts{dir: dir, args: []string{"--config", cfg}, gateway: []string{}})
	var ids []int64
	for i := range 20 {
		ids = append(ids, enqueueCLI(t, d, "--sink", "hook", "--key", fmt.Sprint("k", i), "--data", strings.Repeat("x", 2000)).ID)
	}
	d.waitDelivery(t, ids[19], "a first failure", func(v api.Delivery) bool { return v.Failures > 0 })

	filler := filepath.Join(dir, "filler")
	if err := fillDisk(filler); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling the disk: %v", err)
	}
	code, _, errOut := cli("deliveries", "enqueue", "--socket", d.socket, "--sink", "hook", "--key", "new", "--data", "while full")
	if code != exitFailure || !strings.Contains(errOut, "is full: nothing was stored") || !strings.Contains(errOut, "already stored are still sent") ||
		!strings.Contains(errOut, filepath.Join(dir, "schedd.db")) {
		t.Fatalf("enqueue on a full disk: exit %d: %s", code, errOut)
	}
	err := client.New(d.socket).Do(context.Background(), http.MethodPost, "/v1/deliveries",
		api.DeliveryRequest{Sink: "hook", Key: "new"}, nil)
	if ae, ok := errors.AsType[*api.Error](err); !ok || ae.Status != 507 || ae.Code != api.CodeDiskFull {
		t.Fatalf("API enqueue on a full disk: %v", err)
	}
	st, err := d.status()
	if err != nil || !st.Deliveries.DiskFull || st.Deliveries.EnqueueError == nil {
		t.Fatalf("status on a full disk: %+v, %v", st.Deliveries, err)
	}
	if code, out, _ := cli("status", "--socket", d.socket); code != 0 || !strings.Contains(out, "enqueues refused") {
		t.Fatalf("schedd status on a full disk:\n%s", out)
	}

	// The sink comes back while the disk is still full: every stored entry is delivered.
	hold.Store(false)
	for _, id := range ids {
		d.waitDelivery(t, id, "delivered on a full disk", func(v api.Delivery) bool { return v.State == api.DeliveryDelivered })
	}
	if code, _, _ := cli("deliveries", "enqueue", "--socket", d.socket, "--sink", "hook", "--key", "new", "--data", "still full"); code != exitFailure {
		t.Fatal("an enqueue was accepted with the disk still full")
	}

	// Space returns: enqueue works again (the store looks for space at most once a second).
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, out, errOut := cli("deliveries", "enqueue", "--json", "--socket", d.socket, "--sink", "hook", "--key", "new", "--data", "after")
		if code == 0 {
			if !strings.Contains(out, `"created": true`) {
				t.Fatalf("enqueue after space returned: %s", out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("enqueue still refused after space returned: %s", errOut)
		}
		time.Sleep(100 * time.Millisecond)
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		st, err = d.status()
		if err == nil && !st.Deliveries.DiskFull && st.Deliveries.EnqueueError == nil && st.Deliveries.Delivered == 21 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status after space returned: %+v, %v", st.Deliveries, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ok := 0
	for _, r := range sink.requests() {
		if r.status == http.StatusOK {
			ok++
		}
	}
	if ok != 21 {
		t.Fatalf("the sink accepted %d deliveries, want 21", ok)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// fillDisk writes path until the file system is full.
func fillDisk(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 1<<16)
	for {
		if _, err := f.Write(buf); err != nil {
			return err
		}
	}
}
