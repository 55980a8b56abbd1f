/*
 * shim/ttrpc_server.h — a ttrpc server on the loop: accepts connections on
 * a listening unix socket, decodes each request frame into the server's
 * arena, calls the method's handler, and sends replies in the order they
 * are made. A handler may answer at once or keep the call and answer later
 * (Wait answers when the process exits); the arena is reset when the
 * handler returns, so a kept call keeps only what it copied.
 *
 * No thread per connection and no allocation per message beyond what the
 * arena and the buffers have grown to: a connection holds one receive
 * buffer (as large as the largest frame it got) and two send buffers (one
 * in flight, one filling).
 */
#ifndef URSA_SHIM_TTRPC_SERVER_H
#define URSA_SHIM_TTRPC_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/loop.h"
#include "shim/ttrpc.h"

struct ttrpc_server;
struct ttrpc_call;

/* @req: the decoded request (in the arena, valid until the handler returns) */
typedef void (*ttrpc_handler)(struct ttrpc_call *call, const ProtobufCMessage *req, void *arg);

struct ttrpc_method {
	const char *service; /* e.g. "containerd.task.v2.Task" */
	const char *name;    /* e.g. "Create" */
	const ProtobufCMessageDescriptor *in;
	ttrpc_handler fn;
};

/**
 * ttrpc_server_new() - serve @methods on a listening socket
 * @loop: the loop the server runs on
 * @listen_fd: a listening unix stream socket (the server owns it)
 * @methods: the methods, ended by one whose name is NULL
 * @arg: passed to every handler
 *
 * Return: the server, or NULL (errno set).
 */
struct ttrpc_server *ttrpc_server_new(struct urs_loop *loop, int listen_fd,
				      const struct ttrpc_method *methods, void *arg);

/**
 * ttrpc_server_on_handled() - call @fn after each request's handler returns
 * and after each answer (a kept call's comes later)
 * @srv: the server
 * @fn: the hook (NULL: none), e.g. to settle memory after a burst
 * @arg: passed to @fn
 */
void ttrpc_server_on_handled(struct ttrpc_server *srv, void (*fn)(void *arg), void *arg);

/**
 * ttrpc_server_close() - stop accepting; close every connection once its
 * replies are sent; free the server when the last one has gone
 * @srv: the server
 */
void ttrpc_server_close(struct ttrpc_server *srv);

/**
 * ttrpc_server_conns() - connections open now
 * @srv: the server
 *
 * Return: the count.
 */
unsigned ttrpc_server_conns(const struct ttrpc_server *srv);

/**
 * ttrpc_reply() - answer a call with its reply message
 * @call: the call (done with after this)
 * @reply: the reply, or NULL for google.protobuf.Empty
 *
 * A call whose connection has closed is dropped.
 */
void ttrpc_reply(struct ttrpc_call *call, const ProtobufCMessage *reply);

/**
 * ttrpc_fail() - answer a call with an error status
 * @call: the call (done with after this)
 * @code: enum ttrpc_code
 * @fmt: the message (printf format)
 */
void ttrpc_fail(struct ttrpc_call *call, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/**
 * ttrpc_call_method() - the method a call is for
 * @call: a call not yet answered
 *
 * Return: its name (e.g. "Create").
 */
const char *ttrpc_call_method(const struct ttrpc_call *call);

/**
 * ttrpc_call_live() - whether the call's client is still there to answer
 * @call: a kept call
 *
 * Return: false once its connection has closed (ttrpc_reply() would drop).
 */
bool ttrpc_call_live(const struct ttrpc_call *call);

#endif
