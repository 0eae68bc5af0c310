module github.com/schedd/schedd/bench/cron

go 1.26.0

replace github.com/schedd/schedd => ../..

require (
	github.com/go-co-op/gocron/v2 v2.21.2
	github.com/schedd/schedd v0.0.0-00010101000000-000000000000
)

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/jonboulle/clockwork v0.5.0 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	go.uber.org/zap v1.28.0 // indirect
)
