// Command asynqbench enqueues tasks with asynq (github.com/hibiken/asynq) on a Redis
// server, the comparison of bench/deliveries/run.sh: the same payload size, number of
// requests and concurrency as dlbench's enqueue, through the same closed loop
// (bench/deliveries/load), with asynq's ordinary client (go-redis underneath). Each task
// carries its own task id, as each schedd entry carries its own idempotency key. It is a
// module of its own so that schedd's go.mod does not depend on asynq.
//
//	asynqbench -addr 127.0.0.1:6390 -clients 16 -n 40000 -size 256 -prefix many
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/hibiken/asynq"

	"github.com/schedd/schedd/bench/deliveries/load"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "asynqbench:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:6379", "the Redis server")
	clients := flag.Int("clients", 1, "concurrent clients (one asynq client: go-redis's pool)")
	n := flag.Int("n", 5000, "tasks in all")
	size := flag.Int("size", 256, "payload bytes")
	prefix := flag.String("prefix", "k", "task id prefix (unique per run)")
	flag.IntVar(&load.ServerPID, "server-pid", 0, "redis-server's pid, to report its CPU time per task")
	flag.Parse()
	c := asynq.NewClient(asynq.RedisClientOpt{Addr: *addr})
	defer c.Close()
	payload := []byte(strings.Repeat("x", *size))
	ctx := context.Background()
	r, err := load.Run("asynq enqueue on redis (appendfsync always)", *clients, *n, func(_, i int) error {
		_, err := c.EnqueueContext(ctx, asynq.NewTask("hook", payload), asynq.TaskID(fmt.Sprintf("%s-%d", *prefix, i)))
		return err
	})
	if err != nil {
		return err
	}
	return load.Emit(r)
}
