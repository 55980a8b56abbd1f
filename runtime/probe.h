/*
 * runtime/probe.h — what the running kernel's io_uring can do.
 *
 * Each feature newer than the oldest kernel we accept is probed once per
 * process (opcode probe, trial setup or trial registration), and can be
 * forced off for tests and benchmarks so that every fallback path runs:
 *   URSA_IOURING_DISABLE=defer_taskrun,read_multishot,...   (environment)
 *   urs_features_force_off(URS_FEAT_...)                     (tests)
 */
#ifndef URSA_RUNTIME_PROBE_H
#define URSA_RUNTIME_PROBE_H

#include <stdbool.h>
#include <stdint.h>

enum urs_feature {
	URS_FEAT_SINGLE_ISSUER = 1u << 0, /* IORING_SETUP_SINGLE_ISSUER (6.0) */
	URS_FEAT_DEFER_TASKRUN = 1u << 1, /* IORING_SETUP_DEFER_TASKRUN (6.1) */
	URS_FEAT_COOP_TASKRUN = 1u << 2,  /* IORING_SETUP_COOP_TASKRUN (5.19) */
	URS_FEAT_MSG_RING = 1u << 3,	  /* IORING_OP_MSG_RING (5.18) */
	URS_FEAT_BUF_RING = 1u << 4,	  /* provided buffer rings (5.19) */
	URS_FEAT_READ_MSHOT = 1u << 5,	  /* IORING_OP_READ_MULTISHOT (6.7) */
	URS_FEAT_CQE_SKIP = 1u << 6,	  /* IOSQE_CQE_SKIP_SUCCESS (5.17) */
	URS_FEAT_PBUF_INC = 1u << 7,	  /* IOU_PBUF_RING_INC (6.12) */
	URS_FEAT_URING_CMD = 1u << 8,	  /* IORING_OP_URING_CMD, SQE128 rings (5.19) */
};

#define URS_FEAT_ALL 0x1ffu

/**
 * urs_features() - features the kernel offers, minus those forced off
 *
 * Probed on first use, once per process (thread-safe; trial rings, ~80 us
 * each), when URSA_IOURING_DISABLE is read too (an unknown name there
 * disables nothing). DEFER_TASKRUN is dropped without SINGLE_ISSUER.
 *
 * Return: URS_FEAT_* bits.
 */
uint32_t urs_features(void);

/**
 * urs_has() - does this process use every feature in @feat?
 * @feat: URS_FEAT_* bits
 *
 * Return: true if all of them are in urs_features().
 */
static inline bool urs_has(uint32_t feat)
{
	return (urs_features() & feat) == feat;
}

/**
 * urs_features_force_off() - force features off (tests)
 * @mask: URS_FEAT_* bits; URS_FEAT_ALL-style masks accumulate
 *
 * Not synchronized: before the loops that should see it are made. A loop
 * already set up keeps what it has.
 */
void urs_features_force_off(uint32_t mask);

/**
 * urs_features_reset() - undo urs_features_force_off() (tests)
 *
 * The environment mask (URSA_IOURING_DISABLE) stays.
 */
void urs_features_reset(void);

/**
 * urs_feature_name() - name of one feature bit
 * @bit: one URS_FEAT_* bit
 *
 * Return: its name ("defer_taskrun", ...), a static string, or NULL.
 */
const char *urs_feature_name(uint32_t bit);

/**
 * urs_features_parse() - parse a comma-separated list of feature names
 * @list: names as urs_feature_name() gives them, or "all"; NULL or "": none
 * @mask: gets the URS_FEAT_* bits (cleared first)
 *
 * Return: 0, or -EINVAL on an unknown name (@mask holds the names before it).
 */
int urs_features_parse(const char *list, uint32_t *mask);

#endif
