/*
 * bench/child.c: the trivial gateway the benchmarks supervise.
 *
 * The first thing main() does is read CLOCK_REALTIME; it then appends one line
 * "PID NANOSECONDS\n" to the file or FIFO named by $BENCH_STAMP (a single write, so
 * lines from successive children never interleave) and sleeps until a signal ends it.
 * SIGTERM, SIGINT and SIGKILL keep their default action: the child dies at once, so a
 * supervisor's stop is never slowed down by the child.
 *
 * A FIFO with no reader is not an error: the line is dropped and the child still sleeps.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);

	const char *path = getenv("BENCH_STAMP");
	if (path != NULL && *path != '\0') {
		char line[64];
		int n = snprintf(line, sizeof line, "%ld %lld\n", (long)getpid(),
				 (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
		int fd = open(path, O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC | O_CREAT, 0600);
		if (fd >= 0) {
			ssize_t w;
			do {
				w = write(fd, line, (size_t)n);
			} while (w < 0 && errno == EINTR);
			close(fd);
		}
	}
	for (;;)
		pause();
}
