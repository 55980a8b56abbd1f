/*
 * store/serve.h — the chunk protocol between a lazy restore's pager
 * (ckpt/lazy.c, in the supervisor) and the ursa-store that fills the image's
 * page data for it (store/remote.h urs_remote_serve): both ends on one host,
 * over a stream socket. Apart from store/remote.h so that the pager, which
 * never links the S3 client, shares only these two structs.
 */
#ifndef URSA_STORE_SERVE_H
#define URSA_STORE_SERVE_H

#include <fcntl.h>
#include <stdint.h>

/* The first message on the socket, before any reply: a reply with chunk
 * URS_REMOTE_SERVE_PAGES and status 0 carrying, as SCM_RIGHTS, the memfd
 * that holds pages.img (its header page, then the page data as it comes
 * in: no copy of the workload's memory is written to a file system). It is
 * sized to the whole pages.img and sealed against shrinking, growing and
 * further seals (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), so that the
 * pager's mapping of it never meets its end. */
#define URS_REMOTE_SERVE_PAGES (UINT32_MAX - 2)
#define URS_REMOTE_PAGES_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

/* A request: chunks [chunk, chunk + n) of the page data object's
 * plaintext (chunk i: bytes [i MiB, +1 MiB)), read in one range; n is 1
 * to URS_REMOTE_SERVE_MAXN. */
struct urs_remote_chunk_req {
	uint32_t chunk, n;
};
#define URS_REMOTE_SERVE_MAXN 8u
/* in a request's n (a single chunk): fetch it again even if it was served
 * before (the pager dropped it from the memfd, ckpt/lazy.c) */
#define URS_REMOTE_SERVE_AGAIN 0x80000000u
/* single chunks (faults) fetched at once beside the ranges, at most */
#define URS_REMOTE_SERVE_SINGLES 3u

/* A request with chunk URS_REMOTE_SERVE_WS carries the image's recorded
 * working set (ckpt/workingset.h): n bytes (at most URS_REMOTE_WS_MAX)
 * follow it. It is stored beside the image (URS_REMOTE_WS_OBJECT) only
 * once a second such request, with n = 0, says paging ended well, and the
 * pager has closed its side; the reply then, chunk URS_REMOTE_SERVE_WS,
 * says whether it was stored. A bare EOF (a pager that failed) drops it. */
#define URS_REMOTE_SERVE_WS  (UINT32_MAX - 1) /* (UINT32_MAX: a failure of no one) */
#define URS_REMOTE_WS_MAX    (1u << 20)	      /* (one sealed chunk) */
#define URS_REMOTE_WS_OBJECT "workingset"

/* A reply per chunk, once it is in the memfd (opened, authenticated). */
struct urs_remote_chunk_reply {
	uint32_t chunk; /* UINT32_MAX: a failure of no one request (status < 0) */
	int32_t status; /* 0: written into the memfd; else -errno */
	char msg[248];	/* the failure, named */
};

#endif
