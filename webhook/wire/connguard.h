/* connguard: deadlines for each phase of a connection, and which connection
 * gives way at the connection limit.
 *
 * libmicrohttpd's connection timeout is an idle timeout: a client that sends
 * a byte now and then keeps its connection, and its slot, for ever. connguard
 * keeps, for each listener, the list of its open connections with the phase
 * each is in and when that phase must be over:
 *
 *   waiting  from the accept (TLS handshake included) until the request's
 *            headers are in, at most header_ms; after a response on a
 *            kept-alive connection, until the next request's headers are
 *            in, at most idle_ms (an idle timeout that bytes dripping in
 *            cannot stretch);
 *   body     from the headers until the whole body is in, at most body_ms;
 *   serving  from the whole request until the response is sent: no
 *            deadline here (libmicrohttpd's idle timeout still applies).
 *
 * One thread looks at every list each tick_ms and cuts the connections past
 * their deadline: shutdown(2), not close, so the descriptor stays
 * libmicrohttpd's; it sees the connection end and closes it as if the client
 * had. A listener's thread never waits for that thread.
 *
 * At the limit, a new connection takes the place of the connection that has
 * been waiting (for its headers, its body or its next request) the longest:
 * clients that hold connections open without finishing a request cannot
 * keep out one that sends its request at once. A new connection is refused
 * only when every open one is being served.
 *
 * Threads: a list's connections are opened, closed and admitted by its
 * listener's thread, under the list's lock, which the sweeping thread takes
 * too; the phase changes are atomic stores and take no lock.
 */
#ifndef RDMA_WEBHOOK_CONNGUARD_H
#define RDMA_WEBHOOK_CONNGUARD_H

#include <stdatomic.h>

/* Listeners one guard can watch: one per HTTPS thread and the plain port. */
#define CONNGUARD_MAX_LISTS 72

/* Why connguard cut a connection. */
enum connguard_reason {
    CONNGUARD_HEADER_TIMEOUT, /* still waiting for the request's headers */
    CONNGUARD_BODY_TIMEOUT,   /* still receiving the body */
    CONNGUARD_DISPLACED,      /* gave way to a new connection at the limit */
    CONNGUARD_REASONS
};

struct connguard_limits {
    unsigned header_ms; /* accept to the first request's headers */
    unsigned body_ms;   /* headers to the end of the body */
    unsigned idle_ms;   /* a response to the next request's headers */
    unsigned tick_ms;   /* how often deadlines are checked */
};

struct connguard;
struct connguard_list;

/* One open connection, embedded in the caller's per-connection state (so
 * that opening one allocates nothing). Its members are connguard's: the
 * caller never reads or writes them. */
struct connguard_conn {
    struct connguard_conn *prev, *next;
    struct connguard_list *list;
    int fd;
    int cut;                  /* shut down by connguard (under the list's lock) */
    atomic_int phase;         /* waiting, body or serving */
    atomic_llong since_ns;    /* when the phase began (monotime) */
    atomic_llong deadline_ns; /* 0: none */
};

/* Allocates a guard with no lists and no thread. Returns ERR_OK, or
 * ERR_NOMEM with *out NULL. */
int connguard_init(struct connguard **out, const struct connguard_limits *lim);
/* A new list for one listener that may hold limit connections (at least 1),
 * or NULL when CONNGUARD_MAX_LISTS are in use. Only before connguard_start. */
struct connguard_list *connguard_add_list(struct connguard *g, unsigned limit);
/* Starts the thread that enforces the deadlines. Returns ERR_OK or ERR_FAIL. */
int connguard_start(struct connguard *g);
/* Stops the thread, frees the guard and its lists and sets *g to NULL; every
 * connection must be closed (the listeners stopped). A no-op on NULL: safe
 * after a failed init or start, and twice. */
void connguard_stop(struct connguard **g);

/* A connection is being accepted on l: 1 to take it (having cut the
 * longest-waiting connection when l is full), 0 to refuse it. */
int connguard_admit(struct connguard_list *l);
/* The accepted connection, on socket fd; it starts waiting for its headers. */
void connguard_open(struct connguard_list *l, struct connguard_conn *c, int fd);
/* The connection is closed; it leaves its list. */
void connguard_close(struct connguard_conn *c);

/* Phase changes; each takes NULL (a connection that is not tracked). */
void connguard_headers_in(struct connguard_conn *c);   /* the body is next */
void connguard_request_in(struct connguard_conn *c);   /* the request is whole */
void connguard_response_out(struct connguard_conn *c); /* wait for the next */

/* For metrics: connections open on every list and not cut; connections cut
 * for a reason; connections refused at the limit with nothing to displace. */
unsigned connguard_open_count(struct connguard *g);
unsigned long long connguard_cuts(const struct connguard *g, enum connguard_reason why);
unsigned long long connguard_refused(const struct connguard *g);

#endif
