/*
 * tests/shim/fuzz_ttrpc.c — fuzz target for what containerd (or anyone who
 * reaches the shim's socket) sends the shim: a byte stream cut into ttrpc
 * frames as the server cuts it (shim/ttrpc_server.c), each request's
 * envelope decoded into the arena, and its payload decoded as the message
 * of the method it names and as every other Task request message (the
 * parsers a crafted frame can reach), plus the runc options a Create may
 * carry. The arena never holds more than its limit.
 * Replayed over tests/shim/corpus by tests/fuzz/fuzz_main.c in the unit
 * suite; run by libFuzzer when clang has it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shim/proto/task.pb-c.h"
#include "shim/ttrpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const ProtobufCMessageDescriptor *const descs[] = {
	&containerd__task__v2__create_task_request__descriptor,
	&containerd__task__v2__delete_request__descriptor,
	&containerd__task__v2__exec_process_request__descriptor,
	&containerd__task__v2__resize_pty_request__descriptor,
	&containerd__task__v2__kill_request__descriptor,
	&containerd__task__v2__close_iorequest__descriptor,
	&containerd__task__v2__pids_request__descriptor,
	&containerd__task__v2__checkpoint_task_request__descriptor,
	&containerd__task__v2__update_task_request__descriptor,
	&containerd__task__v2__shutdown_request__descriptor,
	&containerd__task__v2__runc_options__descriptor,
};

static void one(const uint8_t *p, size_t n, struct ttrpc_arena *a)
{
	Ttrpc__Request *r = ttrpc_request_decode(p, n, a);
	if (r) {
		if (!r->service || !r->method)
			abort();
		for (size_t i = 0; i < sizeof(descs) / sizeof(descs[0]); i++) {
			ProtobufCMessage *m = protobuf_c_message_unpack(
				descs[i], &a->pa, r->payload.len, r->payload.data);
			if (m && m->descriptor != descs[i])
				abort();
			Containerd__Task__V2__CreateTaskRequest *c = (void *) m;
			if (m &&
			    descs[i] == &containerd__task__v2__create_task_request__descriptor &&
			    c->options && c->options->value.len)
				protobuf_c_message_unpack(
					&containerd__task__v2__runc_options__descriptor, &a->pa,
					c->options->value.len, c->options->value.data);
		}
	}
	ttrpc_arena_reset(a);
	if (a->total > TTRPC_ARENA_MAX)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ttrpc_arena a;
	ttrpc_arena_init(&a);
	size_t off = 0;
	while (size - off >= TTRPC_HDR_LEN) {
		struct ttrpc_hdr h;
		if (ttrpc_hdr_get(data + off, &h) < 0)
			break; /* the server closes the connection */
		if (size - off - TTRPC_HDR_LEN < h.len)
			break; /* a frame not yet whole */
		if (h.type == TTRPC_REQUEST)
			one(data + off + TTRPC_HDR_LEN, h.len, &a);
		off += TTRPC_HDR_LEN + h.len;
	}
	ttrpc_arena_fini(&a);
	return 0;
}
