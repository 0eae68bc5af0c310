// Command cronbench measures 10,000 cron jobs due every minute, run by a real schedd daemon
// and, for comparison, in process by go-co-op/gocron v2. bench/cron/run.sh drives it; see
// bench/README.md, section "Cron jobs".
//
//	cronbench config -jobs N -jitter D -url URL      print a schedd config with N jobs
//	cronbench serve -addr-file F -out F -jitter D     the jobs' HTTP target (204), recording arrivals
//	cronbench gocron -jobs N -jitter D -url URL -out F   the same jobs run by gocron in this process
//	cronbench sample -pid P -out F                    /proc figures of a process, once a second
//	cronbench tasks -socket S -out F                  every task of a daemon, through the control API
//	cronbench stats -from NS -minutes K -runs F ...   the figures of one run
//
// Every job is "* * * * *" with an http POST to the target, which answers 204 at once: the
// cheapest action that leaves schedd (exec forks a process per run; heartbeat_wake and
// deliver have no equivalent in gocron). Each request carries the run's idempotency key
// "cron:JOB@SLOT", from which the target knows when the run was due: the slot plus the job's
// stagger offset (schedule.Offset, the function schedd uses).
//
// It is a module of its own so that schedd's go.mod does not depend on gocron.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/schedd/schedd/internal/cron/schedule"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: cronbench config|serve|gocron|sample|tasks|stats [flags]")
		os.Exit(2)
	}
	modes := map[string]func([]string) error{
		"config": configMode, "serve": serveMode, "gocron": gocronMode,
		"sample": sampleMode, "tasks": tasksMode, "stats": statsMode,
	}
	mode, ok := modes[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "cronbench: unknown mode %q\n", os.Args[1])
		os.Exit(2)
	}
	if err := mode(os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "cronbench:", err)
		os.Exit(1)
	}
}

// jobName is the name of job i, the same for schedd and gocron.
func jobName(i int) string { return fmt.Sprintf("j%05d", i) }

// body is what every run posts.
const body = `{"bench":"cron"}`

// configMode prints a schedd config with n jobs at "* * * * *" posting to url. The queue
// holds every job: with the default (1000) a burst of 10,000 would skip 9,000 as queue_full.
func configMode(args []string) error {
	fs := flag.NewFlagSet("config", flag.ExitOnError)
	n := fs.Int("jobs", 10000, "jobs")
	jitter := fs.Duration("jitter", 0, "each job's jitter (0: all due at the same instant)")
	url := fs.String("url", "", "the target's URL")
	workers := fs.Int("workers", 0, "cron.workers (0: the default)")
	queue := fs.Int("queue", 0, "cron.queue_size (0: the number of jobs)")
	_ = fs.Parse(args)
	if *url == "" {
		return errors.New("config: -url is required")
	}
	if *queue == 0 {
		*queue = max(*n, 1)
	}
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(w, "cron:\n  queue_size: %d\n", *queue)
	if *workers > 0 {
		fmt.Fprintf(w, "  workers: %d\n", *workers)
	}
	if *n > 0 {
		fmt.Fprintln(w, "  jobs:")
	}
	extra := ""
	if *jitter > 0 {
		extra = ", jitter: " + jitter.String()
	}
	for i := range *n {
		fmt.Fprintf(w, "    - {name: %s, schedule: \"* * * * *\"%s, action: {http: {url: %q, body: '%s'}}}\n",
			jobName(i), extra, *url, body)
	}
	return w.Flush()
}

// runKey is the run key of a job's slot as schedd writes it (cron.slotKey).
func runKey(job string, slot time.Time) string {
	return job + "@" + slot.UTC().Format(time.RFC3339Nano)
}

// parseKey is the job and slot of an idempotency key "cron:JOB@SLOT".
func parseKey(key string) (string, time.Time, error) {
	job, slot, ok := strings.Cut(strings.TrimPrefix(key, "cron:"), "@")
	if !ok {
		return "", time.Time{}, fmt.Errorf("idempotency key %q is not cron:JOB@SLOT", key)
	}
	t, err := time.Parse(time.RFC3339Nano, slot)
	return job, t, err
}

// due is when a job's slot is due: the slot plus its stagger offset.
func due(job string, slot time.Time, jitter time.Duration) time.Time {
	return slot.Add(schedule.Offset(job, jitter))
}
