/* ready_probe: starts a server and measures its time to ready for `make bench`.
 *
 * Forks and execs COMMAND, then polls GET /readyz over plain HTTP on
 * 127.0.0.1:PORT every 100 us until it answers 200. Prints
 *   pid=PID ready_us=MICROSECONDS
 * (from just before the exec to the first 200) and exits, leaving the server
 * running; its stdout goes to stderr. Exits 1, killing the server, when it is not ready within
 * TIMEOUT_MS or exits first.
 *
 * Usage: ready_probe PORT TIMEOUT_MS COMMAND [ARGS...]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_us(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000LL + t.tv_nsec / 1000;
}

/* 1 when GET /readyz answered 200. */
static int probe(unsigned short port)
{
    static const char req[] = "GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    char buf[64];
    size_t got = 0;
    int fd, ok = 0;

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        write(fd, req, sizeof(req) - 1) == (ssize_t)(sizeof(req) - 1)) {
        while (got < 12) {
            ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        buf[got] = '\0';
        ok = got >= 12 && strncmp(buf, "HTTP/1.", 7) == 0 && strncmp(buf + 9, "200", 3) == 0;
    }
    close(fd);
    return ok;
}

int main(int argc, char **argv)
{
    struct timespec tick = {0, 100000};
    long long t0, deadline;
    unsigned short port;
    pid_t pid;
    int status;

    if (argc < 4) {
        fprintf(stderr, "usage: %s PORT TIMEOUT_MS COMMAND [ARGS...]\n", argv[0]);
        return 2;
    }
    port = (unsigned short)atoi(argv[1]);
    t0 = now_us();
    deadline = t0 + atoll(argv[2]) * 1000;
    pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        /* The server's stdout goes to stderr: whoever reads ours gets EOF when we exit. */
        dup2(STDERR_FILENO, STDOUT_FILENO);
        execvp(argv[3], argv + 3);
        fprintf(stderr, "ready_probe: cannot run %s: %s\n", argv[3], strerror(errno));
        _exit(127);
    }
    for (;;) {
        if (probe(port)) {
            printf("pid=%d ready_us=%lld\n", (int)pid, now_us() - t0);
            return 0;
        }
        if (waitpid(pid, &status, WNOHANG) == pid) {
            fprintf(stderr, "ready_probe: %s exited before it was ready\n", argv[3]);
            return 1;
        }
        if (now_us() > deadline) {
            fprintf(stderr, "ready_probe: %s not ready within %s ms\n", argv[3], argv[2]);
            kill(pid, SIGKILL);
            return 1;
        }
        nanosleep(&tick, NULL);
    }
}
