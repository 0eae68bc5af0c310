/*
 * bench/floor.c: the least a supervisor can do, as a reference for respawn latency.
 *
 *   floor CHILD [ARG...]
 *
 * Starts CHILD, blocks in waitpid until it ends and starts it again at once: no process
 * group, no pipes, no logging, no state. The time from a kill -9 of its child to the next
 * child's main() is the kernel's exit, wake-up, fork and exec cost on this machine: what
 * any supervisor's respawn is made of before it adds work of its own.
 *
 * SIGTERM kills the current child and ends floor.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t child;

static void on_term(int sig)
{
	(void)sig;
	if (child > 0)
		kill(child, SIGKILL);
	_exit(0);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: floor CHILD [ARG...]\n");
		return 2;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigset_t term, old;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	for (;;) {
		/* SIGTERM is held from fork until the pid is recorded, so it always finds it. */
		sigprocmask(SIG_BLOCK, &term, &old);
		pid_t p = fork();
		if (p == 0) {
			sigprocmask(SIG_SETMASK, &old, NULL);
			execv(argv[1], argv + 1);
			perror("execv");
			_exit(127);
		}
		child = p > 0 ? p : 0;
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (p < 0) {
			perror("fork");
			sleep(1);
			continue;
		}
		int st;
		while (waitpid(p, &st, 0) < 0 && errno == EINTR)
			;
		child = 0;
	}
}
